// Package receipt signs and verifies slackbot's approval receipts: a
// compact JWS (EdDSA over Ed25519, the key's id in the kid header, typ
// slackbot-receipt+jwt) that binds one approved tool call — its
// tool_call_id, its tool, a digest of the exact arguments that will run,
// who approved it, under which route and which request — to slackbot's
// key, until it expires.
//
// slackbot puts a receipt in DeferredToolResults.metadata[tool_call_id]
// under MetadataKey for every approved call, whoever approved it (people,
// a policy, a grant). Whoever runs the tool verifies it with the public
// keys slackbot serves at /.well-known/jwks.json before acting:
//
//	keys, err := receipt.Fetch(ctx, http.DefaultClient, "https://slackbot.example.com/.well-known/jwks.json")
//	...
//	claims, err := keys.Verify(md[receipt.MetadataKey], receipt.Expect{
//		CallID: call.ToolCallID, Tool: call.ToolName, Args: argsThatWillRun,
//	})
//	if err != nil {
//		return fmt.Errorf("not running %s: %w", call.ToolName, err)
//	}
//
// A receipt proves what slackbot decided, no more: that someone or
// something slackbot's routing allowed approved this call with these
// arguments. It is not the tool's own authorization, which still
// enforces its limits.
//
// The package is a leaf: it imports neither slackbot's domain nor Redis
// or Slack, so a tool's service can verify receipts with it alone.
package receipt
