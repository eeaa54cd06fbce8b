module github.com/queen-mq/gate/gate-api

go 1.26.8

require github.com/queen-mq/gate/libs v0.0.0

require (
	github.com/gorilla/mux v1.8.1 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
)

replace github.com/queen-mq/gate/libs => ../libs
