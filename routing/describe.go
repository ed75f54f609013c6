package routing

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

// Describe writes what `slackbot routes check FILE` shows: each route in
// order with what it matches, where it posts, who approves, how many must,
// the timeout, and its policies.
func (rs *Routes) Describe(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ROUTE\tTOOLS\tFROM\tPOSTS TO\tAPPROVERS\tNEEDS\tSELF\tTIMEOUT\n")
	for _, r := range rs.Routes {
		self := "no"
		if r.AllowSelfApproval {
			self = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
			r.Name, listOr(r.Tools, "any"), listOr(r.Channels, "any"), r.Channel,
			r.approversText(), r.RequiredApprovals, self, formatDuration(r.Timeout))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("describe routes: %w", err)
	}

	var policies []string
	for _, r := range rs.Routes {
		if r.AutoDeny != "" {
			policies = append(policies, fmt.Sprintf("  %s\tauto_deny\t%s\n", r.Name, OneLine(r.AutoDeny)))
		}
		if r.AutoApprove != "" {
			policies = append(policies, fmt.Sprintf("  %s\tauto_approve\t%s\n", r.Name, OneLine(r.AutoApprove)))
		}
	}
	if len(policies) > 0 {
		fmt.Fprintf(tw, "\nPolicies (auto_deny is checked first; an error leaves the call to a person):\n")
		for _, p := range policies {
			fmt.Fprint(tw, p)
		}
	}
	var attention []string
	for _, r := range rs.Routes {
		if t := r.attentionText(); t != "" {
			attention = append(attention, fmt.Sprintf("  %s\t%s\n", r.Name, t))
		}
	}
	if len(attention) > 0 {
		fmt.Fprintf(tw, "\nBeyond the card:\n")
		for _, a := range attention {
			fmt.Fprint(tw, a)
		}
	}
	fmt.Fprintf(tw, "\nFirst match wins. A call no route matches is denied.\n")
	if len(rs.MCPServers) > 0 {
		fmt.Fprintf(tw, "\nMCP servers (tools are <name>__<tool>; each needs approval unless read-only):\n")
		fmt.Fprintf(tw, "  SERVER\tTRANSPORT\tREAD-ONLY\tTIMEOUT\n")
		for _, m := range rs.MCPServers {
			timeout := mcptools.DefaultTimeout
			if m.Timeout > 0 {
				timeout = m.Timeout
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", m.Name, m.Config().Transport(), listOr(m.ReadOnly, "none"), formatDuration(timeout))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("describe routes: %w", err)
	}
	return nil
}

func (r *Route) approversText() string {
	all := slices.Clone(r.Users)
	for _, g := range r.Usergroups {
		all = append(all, "@"+g)
	}
	return strings.Join(all, ", ")
}

func listOr(l []string, empty string) string {
	if len(l) == 0 {
		return empty
	}
	return strings.Join(l, ", ")
}

// OneLine puts a multi-line policy expression on one line, for messages.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
