// Package deploy holds the checks of Gate's deployment files that run
// without a Docker engine: compose.yaml loaded with compose-go, the
// Dockerfile's stages against `make image-build-check`, .dockerignore, and
// the operator's guide and alert rules under docs/ against the knobs the
// binaries really read and the metrics they really export. cmd/gate-probe
// is the images' health probe.
package deploy
