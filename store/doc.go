// Package store is slackbot's Redis layer, on go-redis: the pending
// approval behind each resume token, atomic decisions, expiry, resolution
// across processes (Tokens, the Redis-backed agentrunner.Tokens),
// durable run state and the resume queue, the audit stream, dedupe keys,
// and each Slack thread's conversation (its history, and the lease and
// queue its runs take turns by). It imports agentrunner and go-redis, never Slack.
//
// # Guarantees
//
//   - Every change of a token (Open, Create, Decide, Resolve, Cancel,
//     Fail, expiry) is one Lua script: one round trip, atomic. The first
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
//     waiter in Tokens.Wait, the process that recorded the decision of a
//     suspended run with Store.ClaimDirect, or a resume-queue consumer)
//     first wins the claim (Store.ClaimResume).
//   - Every key has a TTL: records live until their deadline plus Grace,
//     shared streams for Retention after their last write.
//
// # Keys
//
// All under Options.Prefix (P):
//
//	P a:<token>      hash: the record (see scripts.go for its fields)
//	P deadlines      sorted set: open tokens by deadline (ms)
//	P resume         stream: resume jobs, consumer group "resumers"
//	P audit          stream: audit events, MAXLEN ~ AuditMaxLen
//	P callbacks      stream: callback deliveries, consumer group "callbackers"
//	P callbacks:retry sorted set: callback attempts waiting for their time
//	P jobs           stream: after-decision jobs (card updates), consumer group "workers"
//	P jobs:retry     sorted set: job attempts waiting for their time
//	P idem:<digest>  string: the token an API client's idempotency key made
//	P run:<run id>   string: RunState JSON
//	P claim:<token>  string: owner of the token's resumption
//	P proc:<owner>   string: liveness of a process running Tokens.Run
//	P dedupe:<key>   string: Dedupe marker
//	P thread:<team>/<channel>/<ts>:h  string: a Slack thread's history (JSON), ThreadTTL
//	P thread:<team>/<channel>/<ts>:l  string: the run id holding the thread (lease)
//	P thread:<team>/<channel>/<ts>:q  list: turns waiting for the thread, "<run id>|<payload>"
//	P ended          pub/sub channel (not a key): tokens that ended
//
// # Embedded Redis
//
// Open with an empty URL starts miniredis in-process, which runs the same
// scripts and commands (EVALSHA, streams with XREADGROUP and XAUTOCLAIM,
// pub/sub); the tests run the main lifecycle against both.
package store
