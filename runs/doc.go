// Package runs is the workflow of an agent run started from a chat
// message: it starts the run, lets the runs of one thread take turns,
// hibernates a run whose calls were handed to people, resumes it when
// their request ends (directly, from the resume queue, or after the
// expiry), records what each approved tool did, and posts the run's
// answer once, however many processes finish the run.
//
// It decides nothing itself: decisions are approval's. It declares the
// ports it needs — the chat it posts in (Chat), the requests (Approvals),
// the threads' history and turns (Threads), the saved runs and the
// claims on their resumption (RunStore), the durable job queue (Jobs) and
// the answers' marks (Answers) — and knows neither Slack nor Redis: bot
// implements Chat, store (through cmd/slackbot's adapters) the rest.
// docs/ARCHITECTURE.md, "Walk 2", follows a resumed run through it.
package runs
