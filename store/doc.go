// Package store is slackbot's Redis layer, on go-redis: the pending
// approval behind each resume token, atomic decisions, expiry, resolution
// across processes (Tokens, the Redis-backed agentrunner.Tokens),
// durable run state and the resume queue, the audit stream, dedupe keys,
// and each Slack thread's conversation (its history, and the lease and
// queue its runs take turns by). It imports agentrunner and go-redis, never Slack.
//
// # Guarantees
//
//   - Every change of a token (Create, Decide, Answer, Resolve, Cancel,
//     Fail, Sweep) is one Lua script: one round trip, atomic, and only
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
//     until WAIT confirms them (record_stage.go): nothing acts on a change the
//     replicas have not confirmed.
//
// Open takes redis://, redis+sentinel:// and redis+cluster:// URLs, or an
// empty one for miniredis in-process. On Cluster every key shares one
// hash tag (DefaultClusterPrefix), because each token script touches the
// record and the shared streams in one atomic step. The keys, the
// behaviour on failover, why one Cluster slot is enough, and the scripts
// that read undeclared keys are in docs/OPERATIONS.md ("Redis").
package store
