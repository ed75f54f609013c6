import type { Message } from "./ai-sdk.js";
/**
 * rewriteEdits returns messages with each call of edits (call id →
 * edited input) holding the edited input, and its approval request
 * without the model's own input, so that the SDK checks the edit and runs
 * exactly it.
 */
export declare function rewriteEdits(messages: readonly Message[], edits: ReadonlyMap<string, unknown>): Message[];
/**
 * holdApprovals returns the tools with each conditional needsApproval
 * (a function) wrapped so that it also says yes for a call the
 * conversation's last message approves: the SDK asks needsApproval again
 * with the approved (possibly edited) input before it runs the call, and
 * an edit below the tool's threshold would otherwise turn the approval
 * into a denial. It only ever adds "yes": a call the function would have
 * let through unasked still is asked about only when approved already.
 * argsSchemasOf offers Edit for a conditional tool only once held.
 */
export declare function holdApprovals<T extends Record<string, {
    needsApproval?: unknown;
}>>(tools: T): T;
/** isHeld reports whether argsSchemasOf may offer Edit for t: its needsApproval is no function, or holdApprovals wrapped it. */
export declare function isHeld(t: {
    needsApproval?: unknown;
}): boolean;
/** ApprovalResponseInMessage is a tool-approval-response part as the adapter writes it. */
export interface ApprovalResponseInMessage {
    type: "tool-approval-response";
    approvalId: string;
    approved: boolean;
    providerOptions?: {
        slackbot?: {
            receipt?: string;
        };
    };
}
/**
 * approvalOf returns the approving tool-approval-response for call id in
 * the last message, a tool message (what the SDK's collectToolApprovals
 * reads), or undefined.
 */
export declare function approvalOf(messages: readonly unknown[], id: string): ApprovalResponseInMessage | undefined;
/**
 * strictDefaults returns a JSON Schema in which every object member that
 * has a default is required too: the SDK parses an approved edit again and
 * refuses it unless it parses to itself, which an edit that leaves a
 * defaulted member out never does.
 */
export declare function strictDefaults(schema: unknown): unknown;
