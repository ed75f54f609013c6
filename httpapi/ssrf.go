package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// Callbacks reach only public unicast addresses. The table of what is not
// public is code.dny.dev/ssrf's, generated from IANA's IPv4 and IPv6
// special-purpose address registries: loopback, private, link-local (the
// cloud metadata service), CGNAT 100.64/10 (Alibaba's metadata at
// 100.100.100.200), benchmarking 198.18/15, 192.0.0/24, 240/4, multicast,
// documentation ranges, and for IPv6 everything outside 2000::/3 (which
// takes NAT64 64:ff9b::/96, IPv4-compatible ::a.b.c.d and IPv4-mapped
// ::ffff:a.b.c.d, ULA, link-local) plus the special ranges inside it (6to4,
// Teredo, ORCHID, documentation). The same check runs when a request is
// created (on the URL's host after resolving it) and on every address the
// deliverer dials, so a name that rebinds to an internal address between
// the two is refused too.
var callbackGuard = ssrf.New(ssrf.WithAnyPort())

// errPrivateAddress refuses a callback to an address that is not public.
var errPrivateAddress = errors.New("callback to a special-purpose (loopback, private, link-local, shared or reserved) address refused")

// Resolver looks up the addresses of a callback host; *net.Resolver
// implements it. Tests hand in a fake so that no real DNS is used.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// resolveTimeout bounds the lookup of a callback host when a request is
// created.
const resolveTimeout = 5 * time.Second

// publicAddr returns nil for a public unicast address and an error
// wrapping errPrivateAddress for anything in the special-purpose
// registries. An IPv4-mapped address is judged as the IPv4 address it
// maps, which is what the kernel would connect to.
func publicAddr(ip netip.Addr) error {
	if err := callbackGuard.SafeAddr(ip.Unmap()); err != nil {
		return fmt.Errorf("%w: %s", errPrivateAddress, ip)
	}
	return nil
}

// guardDial is the deliverer's net.Dialer Control: it runs on the address
// actually dialled, after DNS, and refuses any that is not public.
func guardDial(network, address string, _ syscall.RawConn) error {
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return fmt.Errorf("%w: network %s", errPrivateAddress, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", errPrivateAddress, err)
	}
	return publicAddr(ap.Addr())
}

// dialContext dials address through res, trying each resolved address in
// turn; with guard, the dialer's Control is guardDial.
func dialContext(res Resolver, guard bool) func(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{Timeout: DefaultCallbackTimeout}
	if guard {
		d.Control = guardDial
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, address)
		}
		addrs, err := res.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, ip := range addrs {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
		}
		if len(errs) == 0 {
			return nil, fmt.Errorf("lookup %s: no addresses", host)
		}
		return nil, errors.Join(errs...)
	}
}

// checkCallbackHost refuses a callback host that is, or resolves to, an
// address callbacks may not reach. Every address must be public: which one
// the deliverer ends up dialling is not known in advance.
func checkCallbackHost(ctx context.Context, res Resolver, host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if publicAddr(ip) != nil {
			return invalid("callback_url must point at a public address; %s is special-purpose (loopback, private, link-local, shared or reserved)", host)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, err := res.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return invalid("callback_url host %s does not resolve", strconv.Quote(host))
	}
	for _, ip := range addrs {
		if publicAddr(ip) != nil {
			return invalid("callback_url host %s resolves to a special-purpose address (loopback, private, link-local, shared or reserved); callbacks reach only public addresses", strconv.Quote(host))
		}
	}
	return nil
}

// checkCallbackURL accepts https URLs, and http ones to this machine's
// loopback (for development and tests), without credentials or fragment.
func checkCallbackURL(s string, allowPrivate bool) error {
	if s == "" {
		return nil
	}
	if len(s) > maxCallbackURL {
		return invalid("callback_url is longer than %d characters", maxCallbackURL)
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return invalid("callback_url must be an absolute https:// URL")
	}
	switch {
	case u.User != nil:
		return invalid("callback_url must not contain credentials; callbacks are signed instead")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return invalid("callback_url must not have a fragment")
	case !allowPrivate && isPrivateHost(u.Hostname()):
		return invalid("callback_url must point at a public address, not a loopback, private, link-local, shared or reserved one")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && allowPrivate && isLoopback(u.Hostname()):
		return nil
	}
	return invalid("callback_url must use https")
}

// isPrivateHost reports whether host is an IP literal (or localhost) that
// callbacks must not reach. Names are resolved and checked in handleCreate
// (checkCallbackHost) and again when dialling (guardDial).
func isPrivateHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && publicAddr(ip) != nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
