package plane

import (
	"context"

	"github.com/queen-mq/gate/libs/wire"
)

// Actor is who makes a request, as the change history records it: the
// console's signed-in identity, or the application plane.
type Actor struct {
	// Who is the console identity (an e-mail), or "api".
	Who string
	// Via is wire.ViaConsole or wire.ViaAPI.
	Via string
}

type actorKey struct{}

// WithActor marks ctx as a console request of identity who: gate-console
// calls it (server.WithActor) on every request it hands to the mounted
// application plane, after its session check. The application plane's own
// listener never sets it, so nothing a client sends there can claim an
// identity.
func WithActor(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, actorKey{}, Actor{Who: who, Via: wire.ViaConsole})
}

// ActorOf is who makes the request of ctx: the console identity WithActor
// set, else the application plane ("api").
func ActorOf(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok && a.Who != "" {
		return a
	}
	return Actor{Who: wire.ViaAPI, Via: wire.ViaAPI}
}
