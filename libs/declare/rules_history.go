package declare

// RuleWatchHistory refuses a Watch on a server without history.
const RuleWatchHistory = "watch-history"

// historyRules refuses Watch when the declaring server has no PostgreSQL
// history: a Watch exists to be recorded, and without PG_HOST nothing
// would be.
func (c *checker) historyRules() {
	if !c.doc.Watching() {
		return
	}
	if c.in.History == nil {
		c.unchecked(RuleWatchHistory)
		return
	}
	if !*c.in.History {
		c.add(RuleWatchHistory, "/watch", "watch needs PostgreSQL history and this server has none: nothing would record the observed traffic; set PG_HOST (and PG_PORT, PG_USER, PG_PASSWORD, PG_DATABASE, or PG_URL) on gate-api and run gate-recorder, or remove watch and declare budgets to enforce limits", nil)
	}
}
