import type { SlackbotClient } from "./client.js";
import type { RunOutcome } from "./decisions.js";
import type { Answer, StepResult } from "./ai-sdk.js";
export type { RunOutcome } from "./decisions.js";
/**
 * ranOutcomes returns the answer's outcomes with what result (the next
 * generateText or settled streamText result, generated from the answer's
 * messages) says became of each approved call.
 */
export declare function ranOutcomes(answered: Pick<Answer, "outcomes">, result: StepResult): RunOutcome[];
/**
 * reportOutcomes reads what became of the answer's approved calls from
 * result (ranOutcomes) and reports each to slackbot
 * (SlackbotClient.reportOutcome), which shows it on the call's card: a
 * call the SDK refused to run says it did not run, and why. A report
 * slackbot refuses or cannot take is not thrown (the run went on) but
 * kept in the outcome's reportError.
 */
export declare function reportOutcomes(client: SlackbotClient, answered: Pick<Answer, "outcomes"> & {
    approval: {
        token: string;
    };
}, result: StepResult): Promise<RunOutcome[]>;
