module github.com/queen-mq/gate/internal

go 1.26.8
