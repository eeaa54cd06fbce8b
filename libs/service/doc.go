// Package service is the one start/stop shape of every long-running piece
// of Gate (a stage, the relay's reconcile loop, the status publisher, the
// recorder, gate-api's catalogue refresh, the console's live hub, the
// broker fake): Start(ctx) error returns once the piece is under way,
// Started and Stopped are closed at those moments, and Stop cancels it and
// returns only when every goroutine it started has returned.
//
// A piece embeds Base and writes its Start as
//
//	func (p *Piece) Start(ctx context.Context) error {
//		ctx, ok := p.StartInit(ctx)
//		if !ok {
//			return nil // already running
//		}
//		p.Go(func() { p.loop(ctx) })
//		p.Ready()
//		return nil
//	}
//
// and gets Started, Stop and Stopped from Base. Cancelling Start's context
// stops the piece as Stop does (without waiting for it); a piece whose work
// ends by itself (a child process exited, a listener failed) calls End.
// Once the work has ended, Go starts nothing more, so the order in which a
// piece starts its goroutines never matters.
package service
