module github.com/queen-mq/gate/migrations

go 1.26.8
