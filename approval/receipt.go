package approval

import (
	"errors"
	"slices"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/receipt"
)

// Receipt is what a receipt of an approved call says (package receipt
// signs and verifies it; docs/ARCHITECTURE.md, "The data model").
type Receipt = receipt.Claims

// Signer signs the receipts of approved calls; *receipt.Signer
// implements it.
type Signer interface {
	Sign(c Receipt) (string, error)
}

// Approvers returns who approved c: every approver of the approved
// arguments when c needed several, the one who decided otherwise.
func (c *Call) Approvers() []string {
	if c.Status == CallApproved && c.Required >= 2 {
		var by []string
		for _, v := range c.Votes {
			if v.Key == c.ApprovedKey {
				by = append(by, v.By)
			}
		}
		if len(by) > 0 {
			return by
		}
		// Approved with no votes: an authoritative answer (an API client
		// answering for its own request) met the quorum at once.
	}
	if c.DecidedBy == "" {
		return nil
	}
	return []string{c.DecidedBy}
}

// Receipt returns the receipt of approved call c of r: for the arguments
// that will run (the approver's edit, else the call's own), by its
// approvers, on r's token, issued when the approval took effect: when r
// ended, since no call of r runs before (a call approved early waits for
// the others, and its receipt must not expire before it can run), else at
// the decision. A call r's own API client approved has none
// (ErrClientApproval).
func (r *Request) Receipt(c *Call) (Receipt, error) {
	if c.ByClient {
		return Receipt{}, ErrClientApproval
	}
	call, _ := r.Requests.Call(c.ID)
	if edit := c.OverrideArgs; len(edit) > 0 {
		call.Args = edit
	}
	at := c.DecidedAt
	if r.EndedAt.After(at) {
		at = r.EndedAt
	}
	claims, err := receiptOf(call, c.Approvers(), c.Route, r.Token, at)
	if err == nil {
		claims.AMR, claims.Cred = c.stepUps()
	}
	return claims, err
}

// stepUps are what a receipt says of the step-ups behind an approved
// call: the union of the approvers' proofs' AMR and their credential ids,
// in Approvers' order. Both are nil unless every approver stepped up, so
// that a verifier that requires step-up never accepts a quorum in which
// one approver only clicked.
func (c *Call) stepUps() (amr, cred []string) {
	var proofs []*StepUp
	if c.Status == CallApproved && c.Required >= 2 {
		for _, v := range c.Votes {
			if v.Key == c.ApprovedKey {
				proofs = append(proofs, v.StepUp)
			}
		}
	}
	if len(proofs) == 0 {
		proofs = []*StepUp{c.StepUp}
	}
	for _, p := range proofs {
		if p == nil || len(p.AMR) == 0 || p.CredentialID == "" {
			return nil, nil
		}
		for _, m := range p.AMR {
			if !slices.Contains(amr, m) {
				amr = append(amr, m)
			}
		}
		cred = append(cred, p.CredentialID)
	}
	return amr, cred
}

// ErrClientApproval is why a call approved by its request's own API
// client has no receipt: the client's answer is authoritative for its own
// request, but it is not an approval by anyone the route names, and the
// agent's process that holds the key could make it, which is what a
// receipt must not vouch for. The tool sees slackbot_receipt_error.
var ErrClientApproval = errors.New("the request's own API client approved this call, not an approver its route names")

// receiptOf is the receipt of call approved by by on route at at; token
// is empty for a decision made before any request was recorded.
func receiptOf(call agentrunner.ToolCallPart, by []string, route, token string, at time.Time) (Receipt, error) {
	args, err := call.ArgsObject()
	if err != nil {
		return Receipt{}, err
	}
	digest, err := receipt.ArgsSHA256(args)
	if err != nil {
		return Receipt{}, err
	}
	c := Receipt{CallID: call.ToolCallID, Tool: call.ToolName, ArgsSHA256: digest, By: by, Route: route, IssuedAt: at.Unix()}
	if token != "" {
		c.TokenSHA256 = receipt.TokenSHA256(token)
	}
	return c, nil
}

// AddReceipts puts into res, the results of r, the receipt of every call
// res approves, signed by s, under receipt.MetadataKey of the call's
// metadata; a call slackbot cannot sign for (arguments no receipt can
// bind exactly) gets receipt.ErrorMetadataKey instead, saying why. A
// receipt anyone else put in the metadata is taken out first: only
// slackbot's signature makes one.
func AddReceipts(r *Request, res *agentrunner.DeferredToolResults, s Signer) {
	for id, md := range res.Metadata {
		delete(md, receipt.MetadataKey)
		delete(md, receipt.ErrorMetadataKey)
		if len(md) == 0 {
			delete(res.Metadata, id)
		}
	}
	if s == nil {
		return
	}
	if res.Metadata == nil {
		res.Metadata = map[string]map[string]any{}
	}
	for i := range r.Calls {
		c := &r.Calls[i]
		if a, ok := res.Approvals[c.ID]; !ok || !a.Approved || c.Status != CallApproved {
			continue
		}
		claims, err := r.Receipt(c)
		addReceipt(res, c.ID, claims, err, s)
	}
}

// addReceipt signs claims into res's metadata of call id, or records why
// there is no receipt (err, or the signer's error).
func addReceipt(res *agentrunner.DeferredToolResults, id string, claims Receipt, err error, s Signer) {
	var jws string
	if err == nil {
		jws, err = s.Sign(claims)
	}
	md := res.Metadata[id]
	if md == nil {
		md = map[string]any{}
		res.Metadata[id] = md
	}
	if err != nil {
		md[receipt.ErrorMetadataKey] = "slackbot could not sign a receipt for this call: " + err.Error()
		return
	}
	md[receipt.MetadataKey] = jws
}
