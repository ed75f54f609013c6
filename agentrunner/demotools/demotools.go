// Package demotools holds the tools slackbot offers with TOOLS=demo. They
// do real work on local state (a sandbox directory, an in-memory order
// book) so a demo's results can be checked, and they show each way a tool
// can need a person: always (delete_file, delete_customer), by argument
// (issue_refund above a limit), or never (lookup_order).
package demotools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/slackapprove/slackbot/agentrunner"
)

// RefundApprovalLimit is the largest refund issue_refund makes without a
// person's approval.
const RefundApprovalLimit = 100

// Demo is the state the demo tools act on. It is safe for concurrent use.
type Demo struct {
	// Sandbox is the directory delete_file may delete from.
	Sandbox string

	mu        sync.Mutex
	orders    map[string]*Order
	customers map[string]bool
	refunds   []Refund
}

// Order is a demo order.
type Order struct {
	ID       string  `json:"order_id"`
	Customer string  `json:"customer_id"`
	Total    float64 `json:"total"`
	Refunded float64 `json:"refunded"`
	Status   string  `json:"status"`
}

// Refund records an issued refund.
type Refund struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

// New returns demo state with a few orders and customers and a sandbox
// directory (created if missing) holding a few files.
func New(sandbox string) (*Demo, error) {
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		return nil, fmt.Errorf("demo sandbox: %w", err)
	}
	for name, body := range map[string]string{
		"temp.txt":   "scratch data\n",
		"report.csv": "order_id,total\nA-1001,42.50\nA-1002,250.00\n",
		"notes.md":   "# notes\n",
	} {
		p := filepath.Join(sandbox, name)
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return nil, fmt.Errorf("demo sandbox: %w", err)
			}
		}
	}
	d := &Demo{
		Sandbox:   sandbox,
		orders:    map[string]*Order{},
		customers: map[string]bool{"a": true, "C-42": true, "C-77": true},
	}
	for _, o := range []Order{
		{ID: "a", Customer: "a", Total: 10, Status: "delivered"},
		{ID: "A-1001", Customer: "C-42", Total: 42.50, Status: "delivered"},
		{ID: "A-1002", Customer: "C-77", Total: 250, Status: "shipped"},
	} {
		o := o
		d.orders[o.ID] = &o
	}
	return d, nil
}

// Tools returns the four demo tools bound to d.
func (d *Demo) Tools() []*agentrunner.Tool {
	return []*agentrunner.Tool{d.deleteFile(), d.issueRefund(), d.deleteCustomer(), d.lookupOrder()}
}

// Refunds returns the refunds issued so far.
func (d *Demo) Refunds() []Refund {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Refund(nil), d.refunds...)
}

// HasCustomer reports whether the customer still exists.
func (d *Demo) HasCustomer(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.customers[id]
}

// DeleteFileArgs are delete_file's arguments.
type DeleteFileArgs struct {
	Path string `json:"path" jsonschema:"description=Path of the file to delete, relative to the sandbox directory"`
}

func (d *Demo) deleteFile() *agentrunner.Tool {
	return agentrunner.NewTool("delete_file", "Delete a file from the sandbox directory. This cannot be undone.",
		func(_ context.Context, _ *agentrunner.ToolContext, a DeleteFileArgs) (any, error) {
			p, err := d.sandboxPath(a.Path)
			if err != nil {
				return nil, err
			}
			if err := os.Remove(p); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil, fmt.Errorf("file %q does not exist", a.Path)
				}
				return nil, fmt.Errorf("delete %q: %w", a.Path, err)
			}
			return fmt.Sprintf("deleted %s", a.Path), nil
		},
		agentrunner.RequiresApproval(),
		agentrunner.Confirmation(func(call agentrunner.ToolCallPart) string {
			args, _ := call.ArgsMap()
			path, _ := args["path"].(string)
			return fmt.Sprintf("Delete the file %q? This cannot be undone.", path)
		}))
}

// sandboxPath resolves a user-supplied path inside the sandbox, refusing
// anything that would escape it.
func (d *Demo) sandboxPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty")
	}
	clean := filepath.Clean("/" + p)
	full := filepath.Join(d.Sandbox, clean)
	rel, err := filepath.Rel(d.Sandbox, full)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("path %q is outside the sandbox", p)
	}
	return full, nil
}

// Files lists the files left in the sandbox.
func (d *Demo) Files() []string {
	entries, _ := os.ReadDir(d.Sandbox)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// RefundArgs are issue_refund's arguments.
type RefundArgs struct {
	OrderID string  `json:"order_id" jsonschema:"description=The order to refund"`
	Amount  float64 `json:"amount" jsonschema:"description=Amount to refund in dollars,minimum=0"`
}

func (d *Demo) issueRefund() *agentrunner.Tool {
	return agentrunner.NewTool("issue_refund",
		fmt.Sprintf("Refund part or all of an order. Refunds over $%d need a person's approval.", RefundApprovalLimit),
		func(_ context.Context, tc *agentrunner.ToolContext, a RefundArgs) (any, error) {
			if a.Amount > RefundApprovalLimit && !tc.Approved {
				return nil, agentrunner.RequireApproval(map[string]any{
					"reason": fmt.Sprintf("refunds over $%d need approval", RefundApprovalLimit),
				})
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			o, ok := d.orders[a.OrderID]
			if !ok {
				return nil, fmt.Errorf("order %q not found", a.OrderID)
			}
			if a.Amount > o.Total-o.Refunded {
				return nil, agentrunner.Retry(fmt.Sprintf("order %s has only $%.2f left to refund", a.OrderID, o.Total-o.Refunded))
			}
			o.Refunded += a.Amount
			d.refunds = append(d.refunds, Refund(a))
			return fmt.Sprintf("refunded $%.2f on order %s", a.Amount, a.OrderID), nil
		},
		agentrunner.Confirmation(func(call agentrunner.ToolCallPart) string {
			var a RefundArgs
			if m, err := call.ArgsObject(); err == nil {
				_ = json.Unmarshal(m, &a)
			}
			return fmt.Sprintf("Refund $%.2f on order %s?", a.Amount, a.OrderID)
		}))
}

// CustomerArgs are delete_customer's arguments.
type CustomerArgs struct {
	CustomerID string `json:"customer_id" jsonschema:"description=The customer to delete"`
}

func (d *Demo) deleteCustomer() *agentrunner.Tool {
	return agentrunner.NewTool("delete_customer", "Delete a customer and all their data. This cannot be undone.",
		func(_ context.Context, _ *agentrunner.ToolContext, a CustomerArgs) (any, error) {
			d.mu.Lock()
			defer d.mu.Unlock()
			if !d.customers[a.CustomerID] {
				return nil, fmt.Errorf("customer %q not found", a.CustomerID)
			}
			delete(d.customers, a.CustomerID)
			return "deleted " + a.CustomerID, nil
		},
		agentrunner.RequiresApproval(),
		agentrunner.Confirmation(func(call agentrunner.ToolCallPart) string {
			args, _ := call.ArgsMap()
			id, _ := args["customer_id"].(string)
			return fmt.Sprintf("Delete customer %q and all their data? This cannot be undone.", id)
		}))
}

// OrderArgs are lookup_order's arguments.
type OrderArgs struct {
	OrderID string `json:"order_id" jsonschema:"description=The order to look up"`
}

func (d *Demo) lookupOrder() *agentrunner.Tool {
	return agentrunner.NewTool("lookup_order", "Look up an order. Read-only.",
		func(_ context.Context, _ *agentrunner.ToolContext, a OrderArgs) (any, error) {
			d.mu.Lock()
			defer d.mu.Unlock()
			o, ok := d.orders[a.OrderID]
			if !ok {
				return nil, fmt.Errorf("order %q not found", a.OrderID)
			}
			return *o, nil
		},
		agentrunner.ReadOnly())
}
