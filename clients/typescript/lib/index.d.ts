export * from "./client.js";
export * from "./callbacks.js";
export * from "./receipt.js";
export { ArgsSchemaKey, type ArgsSchemas, type SubmitOptions, withArgsSchemas } from "./decisions.js";
