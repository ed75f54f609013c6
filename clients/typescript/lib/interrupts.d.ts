import type { Approval } from "./client.js";
import { type ArgsSchemas } from "./decisions.js";
/** InterruptErrorKind says why the adapter cannot answer an interrupt. */
export type InterruptErrorKind = "unknown_interrupt" | "malformed_interrupt" | "decision_not_allowed" | "not_interrupted" | "unknown_call";
/** InterruptError is an interrupt the adapter cannot answer; the thread stays interrupted and nothing was sent to it. */
export declare class InterruptError extends Error {
    readonly kind: InterruptErrorKind;
    /** The interrupt's id (LangGraph's), when it has one. */
    readonly interruptId?: string | undefined;
    constructor(kind: InterruptErrorKind, message: string, 
    /** The interrupt's id (LangGraph's), when it has one. */
    interruptId?: string | undefined);
}
/** Interrupt is LangGraph's interrupt record ({id, value}) as invoke's __interrupt__ holds it. */
export interface Interrupt {
    id?: string;
    value?: unknown;
}
/** Asked is one tool call an interrupt asks about, as slackbot gets it. */
export interface Asked {
    id: string;
    name: string;
    args: Record<string, unknown>;
    /** The JSON Schema of its arguments, only where the interrupt's rules allow an edit: the card then offers Edit. */
    schema?: Record<string, unknown>;
}
/** Reading is one interrupt as the adapter understands it: its calls, and how to answer them. */
export interface Reading {
    interrupt: Interrupt;
    calls: Asked[];
    /** answer is the resume value for this interrupt as the ended request a decided its calls. */
    answer(a: Approval): unknown;
    /**
     * notRun names the calls a approved that the framework will not run
     * all the same, and why (absent: it runs every approved call).
     */
    notRun?(a: Approval): Array<{
        id: string;
        why: string;
    }>;
}
/** ReadOptions are what a reading needs beyond the interrupt. */
export interface ReadOptions {
    /** Tool name → JSON Schema of its arguments, for the calls whose rules allow an edit. */
    argsSchemas?: ArgsSchemas;
    /** The ids the calls were submitted under (Suspended.call_ids), else derived. */
    ids?: readonly string[];
    /** The graph state's messages: a HITLRequest's calls take the ids of the AI message's tool calls they are. */
    messages?: unknown;
}
/** PendingToolCall is a LangChain tool call: {id, name, args}. */
export interface PendingToolCall {
    id: string;
    name: string;
    args: Record<string, unknown>;
}
/** PendingToolCalls is the interrupt value of pendingToolCalls(). */
export interface PendingToolCalls {
    type: "slackbot/tool-approvals";
    tool_calls: PendingToolCall[];
}
/** ToolDecision is the decision on one call: what interrupt() returns for it, by call id. */
export type ToolDecision = {
    type: "approve";
    args: Record<string, unknown>;
    edited: boolean;
    decidedBy?: string;
} | {
    type: "reject";
    message: string;
    decidedBy?: string;
};
/** Decisions are the resume value of one PendingToolCalls interrupt. */
export type Decisions = Record<string, ToolDecision>;
/** HITLDecisionType is one of LangChain's decision types (langchain 1.5.14, DecisionType). */
export type HITLDecisionType = "approve" | "edit" | "reject";
/** HITLRequest is humanInTheLoopMiddleware's interrupt value (langchain 1.5.14). */
export interface HITLRequest {
    actionRequests: Array<{
        name: string;
        args: Record<string, unknown>;
        description?: string;
    }>;
    reviewConfigs: Array<{
        actionName: string;
        allowedDecisions: HITLDecisionType[];
        argsSchema?: Record<string, unknown>;
    }>;
}
/** HITLDecision is one decision of a HITLResponse. */
export type HITLDecision = {
    type: "approve";
} | {
    type: "edit";
    editedAction: {
        name: string;
        args: Record<string, unknown>;
    };
} | {
    type: "reject";
    message?: string;
};
/** HITLResponse is the resume value humanInTheLoopMiddleware expects: one decision per action request, in order. */
export interface HITLResponse {
    decisions: HITLDecision[];
}
/** HumanInterruptConfig is what a HumanInterrupt allows (@langchain/langgraph 1.7.3, prebuilt). */
export interface HumanInterruptConfig {
    allow_ignore: boolean;
    allow_respond: boolean;
    allow_edit: boolean;
    allow_accept: boolean;
}
/** HumanInterrupt is one Agent Inbox request; the interrupt value is an array of them. */
export interface HumanInterrupt {
    action_request: {
        action: string;
        args: Record<string, unknown>;
    };
    config: HumanInterruptConfig;
    description?: string;
}
/** HumanResponse answers one HumanInterrupt; the resume value is an array of them, in order. */
export type HumanResponse = {
    type: "accept";
    args: null;
} | {
    type: "ignore";
    args: null;
} | {
    type: "response";
    args: string;
} | {
    type: "edit";
    args: {
        action: string;
        args: Record<string, unknown>;
    };
};
/** isPending reports whether v is a PendingToolCalls value. */
export declare function isPending(v: unknown): v is PendingToolCalls;
/** preview is a short, bounded view of an interrupt's value for an error message. */
export declare function preview(v: unknown): string;
/**
 * readInterrupt reads one interrupt the adapter understands, or throws
 * InterruptError (unknown_interrupt, malformed_interrupt) naming it.
 */
export declare function readInterrupt(i: Interrupt, opts?: ReadOptions): Reading;
