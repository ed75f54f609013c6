// Package bot is slackbot's Slack side: it renders pending tool calls as
// Block Kit approval messages and modals, asks people in Slack to decide
// them, handles Slack's interactivity and events, authorizes approvers and
// routes each call to the right channel.
//
// Rendering is pure and separate from transport: ApprovalBlocks,
// ApprovalText and the modal builders turn a Card into slack-go values
// without I/O or clocks, so the same Card always renders the same JSON
// (tested against golden files in testdata/golden). Everything a user or a
// model controls is escaped so it can never mention anyone or inject
// formatting; only the Slack user, channel and usergroup ids the Card names
// on purpose become mentions.
//
// The buttons of an approval message carry the resume token and the
// tool_call_id in their value (EncodeAction / DecodeAction); modals carry
// them, with the message to update, in private_metadata
// (DecodeModalMetadata).
package bot
