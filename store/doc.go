// Package store is slackbot's Redis layer, on go-redis: it stores and
// decides nothing of the domain. What a decision records (its results, its
// vote key, the default wording) comes from package approval
// (Decision.Recorded, RecordedAnswers); the scripts here only make each
// change atomic and "decided once". It imports approval, agentrunner and
// go-redis, never Slack.
//
// # Files
//
// Each concern's Go and the Lua scripts it runs sit in files named for it:
//
//   - store.go: Store, Options, key names, Dedupe; open.go: Open and the Redis
//     URLs; confirm.go: WAIT after a write (REDIS_WAIT_REPLICAS); lock.go:
//     a named lock; trace.go: the trace context scripts pass on;
//     receiptkey.go: the receipt seed.
//   - The request record: record.go (Create, Get, SetMessage, Owner),
//     record_parse.go (the record read into an approval.Request),
//     record_lua.go (the record's fields and the Lua every token script
//     shares: audit, finish), record_decide.go (Decide, decideScript),
//     record_answer.go (an API client's Answer), record_end.go (Cancel,
//     Fail), record_expire.go (Sweep), record_outcome.go (a call's
//     outcome), record_cards.go (a card's lease and durable job),
//     record_stage.go (changes staged until WAIT confirms them, Confirm),
//     record_count.go (OpenCount).
//   - Waiting: tokens.go (Tokens: a run's wait across processes, the
//     end notifications, the heartbeat, the expiry sweep's timer).
//   - Jobs and queues: jobs_stream.go (the consumer-group stream they
//     share), jobs_queue.go (JobQueue), jobs_schedule.go (reminders and
//     escalations), jobs_resume.go (ResumeQueue), jobs_callbacks.go
//     (CallbackQueue), jobs_consume.go (their consumers).
//   - Run state: runstate_saved.go (SaveRun, LoadRun, DeleteRun),
//     runstate_encode.go (its compressed encoding), runstate_origin.go
//     (SaveWaitingRun, a run's origin), runstate_claims.go (who resumes a
//     run: ClaimDirect, ClaimResume), runstate_journal.go (CallJournal:
//     each tool call once), runstate_answer.go (the answer posted once).
//   - API clients: clients_quota.go, clients_idempotency.go,
//     clients_grants.go, clients_mcpcancel.go (MCP cancellations),
//     clients_sessions.go (deferred coding-agent sessions and their claims).
//   - Threads: threads_history.go (Store.Threads, a thread's history),
//     threads_lease.go (the lease and queue its runs take turns by).
//   - audit.go: the audit stream, every writer and the reader.
//   - home.go: what App Home lists and who has it open.
//   - stepup_links.go: the single-use step-up links (approval.StepUpLink).
//
// # Guarantees
//
//   - Every change of a token (Create, Decide, Answer, Cancel, Fail,
//     Sweep) is one Lua script: one round trip, atomic, and only
//     package approval calls them (Tokens only waits). The first
//     valid decision wins, a repeated click returns the decision already
//     made, and a token is resolved, expired, cancelled or failed exactly
//     once.
//   - The script that ends a token also queues its run on the resume
//     stream and publishes the end, so no acknowledged decision is lost
//     even if every process restarts: the run resumes from Redis.
//   - The script that expires a token also queues the job that updates
//     its Slack cards (JobQueue), so the cards say expired even if the
//     process that claimed the expiry dies at once: another replica takes
//     the job over, retries it, and acknowledges it only once done.
//   - A run is resumed at most once: whoever continues it (the local
//     waiter in Tokens.WaitEnded, the process that recorded the decision of a
//     suspended run with Store.ClaimDirect, or a resume-queue consumer)
//     first wins the claim (Store.ClaimResume).
//   - Every key has a TTL: records live until their deadline plus Grace,
//     shared streams for Retention after their last write.
//   - With Options.WaitReplicas N (REDIS_WAIT_REPLICAS), every write a
//     person or client is answered on is followed, on its connection and
//     in the same round trip, by WAIT N: fewer replicas in time and the
//     write fails with approval.ErrUnconfirmed instead of being reported
//     done. Decisions, answers, cancellations and failures are staged
//     until WAIT confirms them (record_stage.go): nothing acts on a change
//     the replicas have not confirmed.
//
// Open takes redis://, redis+sentinel:// and redis+cluster:// URLs, or an
// empty one for miniredis in-process. On Cluster every key shares one
// hash tag (DefaultClusterPrefix), because each token script touches the
// record and the shared streams in one atomic step. The keys, the
// behaviour on failover, why one Cluster slot is enough, and the scripts
// that read undeclared keys are in docs/OPERATIONS.md ("Redis").
package store
