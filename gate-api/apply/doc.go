// Package apply is `gate-api diff` and `gate-api apply`: graphs kept in
// git, checked and applied against a running gate-api. diff prints what
// PUT-ing each file would change (the server's dry run and its diff);
// apply dry-runs every file first, then PUTs each changed one with If-Match
// naming the stored document its dry run compared against, so a change
// anyone made meanwhile is a conflict (exit 3), never overwritten.
package apply
