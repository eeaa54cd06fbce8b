module github.com/queen-mq/gate/gate-bench

go 1.26.8

require (
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/queen-mq/gate/libs v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
	golang.org/x/time v0.16.0
)

require (
	github.com/antithesishq/antithesis-sdk-go v0.9.0-default-no-op // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/go-tpm v0.9.8 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/minio/highwayhash v1.0.4 // indirect
	github.com/nats-io/jwt/v2 v2.8.3 // indirect
	github.com/nats-io/nats-server/v2 v2.15.3 // indirect
	github.com/nats-io/nkeys v0.4.17 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.uber.org/goleak v1.3.0
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/queen-mq/gate/libs => ../libs
