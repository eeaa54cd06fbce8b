// This file fences the web app out of Go: gate-console/ui holds no Go code of
// Gate's, but npm packages under node_modules may ship .go files (ESLint's
// dependency flatted does), and without this boundary `go vet ./gate-console/...`
// and `go test` would build them as part of the gate-console module.
module gate.invalid/console-ui-not-go

go 1.26.8
