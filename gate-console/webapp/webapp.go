// Package webapp embeds the console's web app, built from gate-console/ui
// (Vite + React) into gate-console/webapp/dist. Only dist/.gitkeep is
// committed: until the web app is built, the console answers its pages
// with a 503 saying how to build it.
package webapp

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// FS is the built web app, rooted at dist (index.html, assets/…).
func FS() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // "dist" is a valid path: cannot happen
	}
	return sub
}
