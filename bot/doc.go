// Package bot is slackbot's Slack side, and Slack only: it turns Slack
// payloads into approval.Service calls and shows the Service's requests in
// Slack. The pipeline itself (routing, policies, authorization, recording)
// is package approval's.
//
//   - Cards is the approval.Poster: one Block Kit message per call, posted
//     once, re-sent minimal when Slack refuses it, updated in place.
//   - Usergroups is the approval.Directory: usergroup members through a
//     cache that respects Slack's rate limits.
//   - Bot handles interactivity. A click reads top-down:
//     HandleInteraction (interactivity.go) → parseClick → Interact →
//     blockActions or viewSubmission → target (the request, loaded once,
//     and the workspace check) → decide → approval.Service.DecideOn (one
//     authorization, one audit of a refusal, the store's script), all
//     within the acknowledgement budget (ackbudget.go); Explain
//     (explain.go) leads approval.Explain's sentence with Slack's emoji.
//   - Events hands Slack messages to package runs (which runs the agent
//     and posts its answer through the Bot: the runs.Chat port).
//
// Rendering is pure and separate from transport: ApprovalBlocks,
// ApprovalText, HomeBlocks and the modal builders lay a Card — package
// approval's CallView of a call, with its Choices and words — out as
// slack-go values without I/O or clocks, so the same Card always renders
// the same JSON (tested against golden files in testdata/golden). What a
// card shows and says is approval's; bot adds only Slack's syntax
// (cardMarks), Slack's limits and Slack's ids. Everything a user or a
// model controls is escaped so it can never mention anyone or inject
// formatting; only the Slack user, channel and usergroup ids the Card names
// on purpose become mentions.
//
// The buttons of an approval message carry the resume token and the
// tool_call_id in their value (EncodeAction / DecodeAction); modals carry
// them, with the message to update, in private_metadata
// (DecodeModalMetadata).
package bot
