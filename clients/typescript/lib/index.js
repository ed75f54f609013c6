// @slackbot/client: slackbot's /v1 client, its callback verifier and its
// approval receipt verifier. The framework adapters are separate entry
// points (e.g. "@slackbot/client/openai-agents"), so importing one
// framework's adapter never needs another's package.
export * from "./client.js";
export * from "./callbacks.js";
export * from "./receipt.js";
export { ArgsSchemaKey, withArgsSchemas } from "./decisions.js";
