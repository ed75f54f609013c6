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
//   - With Options.WaitReplicas N (REDIS_WAIT_REPLICAS), every write a
//     person or client is answered on (Create, Decide, Answer, Cancel,
//     Fail) is followed, on its connection and in the same round trip,
//     by WAIT N: fewer replicas in time and the write fails with
//     approval.ErrUnconfirmed instead of being reported done, so a
//     failover to a replica never loses a decision someone was told was
//     recorded. A decision, answer, cancellation or failure is staged
//     first, with no effect, and applied only once WAIT confirmed the
//     staging (stage.go): nothing acts on a change the replicas have not
//     confirmed. An unconfirmed one is applied later by whoever repeats
//     it or by Confirm, lost in a failover to a replica that never had
//     it, or dropped at the request's deadline; meanwhile other changes
//     of the request wait (approval.ErrRecording).
//
// # Sentinel and failover
//
// Open takes redis+sentinel:// URLs (go-redis's failover client). When
// Sentinel promotes a replica: commands reconnect to the new primary; the
// scripts, which a replica never has cached (Redis replicates their
// effects), are sent again (EVALSHA falls back to EVAL on NOSCRIPT, also
// inside the WAIT pipeline); Tokens.Run's subscription is re-established
// by go-redis and every (re)subscription re-reads the waited tokens, so a
// wake-up published while no one listened is not lost; a stream queue
// whose consumer group the new primary lacks recreates it on NOGROUP,
// from the start of the stream; the resume queue hands out any run whose
// waiter went away. Writes the old primary had not passed on are lost
// unless WaitReplicas made them wait (TestSentinelFailover,
// TestWaitReplicas).
//
// # Keys
//
// All under Options.Prefix (P):
//
//	P a:<token>      hash: the record (see scripts.go for its fields)
//	P a:<token>:staged list: a change staged until Redis's replicas confirm it (stage.go)
//	P unconfirmed    sorted set: tokens with a staged change, by when it was staged (ms)
//	P deadlines      sorted set: open tokens by deadline (ms)
//	P resume         stream: resume jobs, consumer group "resumers"
//	P audit          stream: audit events, MAXLEN ~ AuditMaxLen
//	P callbacks      stream: callback deliveries, consumer group "callbackers"
//	P callbacks:retry sorted set: callback attempts waiting for their time
//	P jobs           stream: after-decision jobs (card updates), consumer group "workers"
//	P jobs:retry     sorted set: job attempts waiting for their time
//	P idem:<digest>  string: the token an API client's idempotency key made
//	P rpcid:<digest> hash: token → expiry (ms; "c" first once cancelled) of the MCP calls waiting under an API client's JSON-RPC id (mcpcancel.go)
//	P run:<run id>   string: RunState JSON, zstd-compressed from 256 B (runstate.go)
//	P claim:<token>  string: owner of the token's resumption
//	P proc:<owner>   string: liveness of a process running Tokens.Run
//	P dedupe:<key>   string: Dedupe marker
//	P thread:<team>/<channel>/<ts>:h  string: a Slack thread's history (JSON), ThreadTTL
//	P thread:<team>/<channel>/<ts>:l  string: the run id holding the thread (lease)
//	P thread:<team>/<channel>/<ts>:q  list: turns waiting for the thread, "<run id>|<payload>"
//	P receipt:key    string: the receipt signing seed, when RECEIPT_KEY is not set (no TTL)
//	P ended          pub/sub channel (not a key): tokens that ended
//
// # Redis Cluster
//
// Open takes redis+cluster:// URLs (go-redis's cluster client), and a
// store on a cluster client defaults its prefix to the hash tag
// "{slackbot}:" (DefaultClusterPrefix): every key of the store hashes to
// that tag's one slot, so slackbot uses one shard of a cluster. That is a
// choice, not an accident. Every token script touches the token's record
// and the shared structures at once (the deadline set, the resume, audit
// and callback streams), atomically, in one round trip; Cluster runs a
// script only on keys of one slot. Sharding by token would split those
// structures into partitions that background loops read in turn, and
// give up the single atomic step a decision is today. It is not needed:
// one shard holds several thousand decisions a second on a 2-core
// machine (BENCHMARKS.md, "Redis failover and Cluster"), while one
// slackbot replica saturates at about 2,000 clicks a second and a busy
// workspace makes a few clicks a minute; memory is about 1 KB per pending
// approval, so a million pending approvals fit in a few GB of one shard.
// Use Cluster when it is what your provider offers; for availability use
// replicas and failover (Sentinel, or a managed Redis), not shards.
//
// Some scripts read keys they do not get in KEYS, because the key's name
// is only known inside the script: the heartbeat key proc:<process> of
// whoever holds a claim or lease (the claim in claimScript and waitScript,
// lockScript, answerBeginScript: the holder is read from the claim's
// value, so it cannot be passed up front), and the records the quota
// script reads by the tokens in its sorted set. They build those names
// from the prefix passed in ARGV. On one Redis or Sentinel that is
// always safe. On Redis Cluster it is safe only with a hash-tag prefix:
// the undeclared key lives in the slot of the script's declared keys, on
// the node that runs the script, and Redis Cluster lets the script read
// it (it refuses only a key of another slot than the declared ones,
// "Script attempted to access keys that do not hash to the same slot", or
// of another node, "... a non local key"). A prefix without a tag is
// refused at the first script (CROSSSLOT; TestLifecycleOnCluster).
// Proxies that require every key a script touches to be in KEYS (some
// managed "cluster" offerings check this) refuse these scripts whatever
// the prefix; the store does not support them. With WaitReplicas on a
// cluster, the script and WAIT go to the node that owns the slot
// (ClusterClient.MasterForKey), on one connection.
//
// # Embedded Redis
//
// Open with an empty URL starts miniredis in-process, which runs the same
// scripts and commands (EVALSHA, streams with XREADGROUP and XAUTOCLAIM,
// pub/sub); the tests run the main lifecycle against both.
package store
