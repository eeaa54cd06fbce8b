module github.com/queen-mq/gate/gate-relay

go 1.26.8

require github.com/queen-mq/gate/libs v0.0.0

require (
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/nats-io/nats.go v1.55.0 // indirect
	github.com/nats-io/nkeys v0.4.17 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/queen-mq/gate/libs => ../libs
