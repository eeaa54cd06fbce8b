package declare

func historyRuleCases() []ruleCase {
	yes, no := true, false
	watch := with(func(d m) { d["watch"] = m{"durationSeconds": 600}; nodeOf(d, "in")["budgets"] = a{} })
	return []ruleCase{
		{name: "watch on a server without history", rule: RuleWatchHistory, fire: true, doc: watch,
			in: func(in *Input) { in.History = &no }, at: "/watch", msg: []string{"set PG_HOST"}},
		{name: "watch on a server with history", rule: RuleWatchHistory, doc: watch, in: func(in *Input) { in.History = &yes }},
		{name: "enforcing on a server without history", rule: RuleWatchHistory, doc: base, in: func(in *Input) { in.History = &no }},
	}
}
