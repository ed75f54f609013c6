package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// URL schemes of REDIS_URL naming Sentinels rather than one server.
const (
	schemeSentinel    = "redis+sentinel"
	schemeSentinelTLS = "rediss+sentinel"
	schemeCluster     = "redis+cluster"
	schemeClusterTLS  = "rediss+cluster"
)

// Open connects to the Redis named by redisURL and checks the connection
// with PING. redisURL is one of:
//
//	redis://[user:password@]host:port[/db][?options]    one server (go-redis ParseURL)
//	rediss://...                                        the same over TLS
//	redis+sentinel://[user:password@]host1:26379,host2:26379/<master name>[/<db>][?options]
//	rediss+sentinel://...                               Sentinel with TLS to every node
//	redis+cluster://[user:password@]host1:6379,host2:6379[?options]
//	rediss+cluster://...                                Redis Cluster (with TLS)
//
// The Sentinel form goes through go-redis's failover client, which asks the
// Sentinels for the current primary, follows a failover (it reconnects,
// and its pub/sub re-subscribes) and reads only from the primary. Its
// user:password are those of the Redis servers (primary and replicas); the
// options are go-redis ParseFailoverURL's (dial_timeout, read_timeout,
// pool_size, skip_verify, ...) plus sentinel_username and
// sentinel_password, the Sentinels' own credentials, and tls=true, which
// is the same as rediss+sentinel://. With TLS every node's certificate is
// checked against the address it is dialled at (the Sentinels announce
// the primary by IP unless announce-hostnames is on).
//
// The Cluster form goes through go-redis's cluster client (its options
// are ParseClusterURL's); the store then keeps every key in the one slot
// of the hash tag {slackbot} (see the package documentation, "Redis
// Cluster", for why one slot is enough).
//
// With an empty URL Open starts an embedded in-process Redis (miniredis)
// whose keys expire with the wall clock, so `slackbot dev` runs with
// nothing installed through the same commands and scripts as a real
// Redis; its data is lost when close is called or the process ends.
//
// Commands on the client Open returns give up at their context's
// deadline. close releases the client and the embedded server. Errors
// never repeat a password.
func Open(ctx context.Context, redisURL string) (rdb redis.UniversalClient, close func() error, err error) {
	if redisURL == "" {
		return openEmbedded(ctx)
	}
	c, where, err := newClient(redisURL)
	if err != nil {
		return nil, nil, err
	}
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("ping redis at %s: %w", where, err)
	}
	return c, c.Close, nil
}

// CheckURL reports what is wrong with redisURL, without connecting: nil
// when Open would accept it.
func CheckURL(redisURL string) error {
	c, _, err := newClient(redisURL)
	if err != nil {
		return err
	}
	return c.Close()
}

func openEmbedded(ctx context.Context) (redis.UniversalClient, func() error, error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, nil, fmt.Errorf("start embedded redis: %w", err)
	}
	m.ClockTTL(true)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	closeFn := func() error {
		err := c.Close()
		m.Close()
		return err
	}
	if err := c.Ping(ctx).Err(); err != nil {
		_ = closeFn()
		return nil, nil, fmt.Errorf("ping embedded redis: %w", err)
	}
	return c, closeFn, nil
}

// newClient returns a client of redisURL (not yet connected) and a
// description of where it connects, safe to log.
func newClient(redisURL string) (redis.UniversalClient, string, error) {
	if err := checkDelimiters(redisURL); err != nil {
		return nil, "", fmt.Errorf("parse REDIS_URL: %w", err)
	}
	u, err := url.Parse(redisURL)
	if err != nil {
		return nil, "", fmt.Errorf("parse REDIS_URL: %w", urlCause(err))
	}
	switch u.Scheme {
	case "redis", "rediss":
		opt, err := redis.ParseURL(redisURL)
		if err != nil {
			return nil, "", fmt.Errorf("parse REDIS_URL: %w", urlCause(err))
		}
		// Every command gives up at its context's deadline, not only
		// after the socket timeouts: the path that acknowledges a click
		// has a budget.
		opt.ContextTimeoutEnabled = true
		return redis.NewClient(opt), opt.Addr, nil
	case schemeSentinel, schemeSentinelTLS:
		opt, err := parseSentinelURL(u)
		if err != nil {
			return nil, "", fmt.Errorf("parse REDIS_URL: %w", err)
		}
		opt.ContextTimeoutEnabled = true
		where := fmt.Sprintf("primary %q of the sentinels %s", opt.MasterName, strings.Join(opt.SentinelAddrs, ","))
		return redis.NewFailoverClient(opt), where, nil
	case schemeCluster, schemeClusterTLS:
		opt, err := parseClusterURL(u)
		if err != nil {
			return nil, "", fmt.Errorf("parse REDIS_URL: %w", err)
		}
		opt.ContextTimeoutEnabled = true
		return redis.NewClusterClient(opt), "the cluster nodes " + strings.Join(opt.Addrs, ","), nil
	}
	return nil, "", fmt.Errorf("parse REDIS_URL: scheme %q is none of redis://, rediss://, %s://, %s://, %s://, %s://",
		u.Scheme, schemeSentinel, schemeSentinelTLS, schemeCluster, schemeClusterTLS)
}

// parseClusterURL reads the Cluster form of REDIS_URL (see Open) by
// rewriting it into go-redis ParseClusterURL's form: the first node as
// the host, the others as addr=.
func parseClusterURL(u *url.URL) (*redis.ClusterOptions, error) {
	hosts, err := splitHosts(u.Host, "cluster node")
	if err != nil {
		return nil, err
	}
	if strings.Trim(u.Path, "/") != "" {
		return nil, errors.New("a cluster URL has no path: Redis Cluster has only database 0")
	}
	q := u.Query()
	if q.Has("addr") {
		return nil, errors.New("give the cluster nodes in the host, not as addr=")
	}
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	scheme := "redis"
	if u.Scheme == schemeClusterTLS {
		scheme = "rediss"
	}
	rewritten := url.URL{Scheme: scheme, User: u.User, Host: hosts[0], RawQuery: q.Encode()}
	opt, err := redis.ParseClusterURL(rewritten.String())
	if err != nil {
		return nil, urlCause(err)
	}
	if opt.TLSConfig != nil {
		opt.TLSConfig.ServerName = "" // each node by its own address
	}
	return opt, nil
}

// splitHosts splits a comma-separated list of host:port.
func splitHosts(list, what string) ([]string, error) {
	hosts := strings.Split(list, ",")
	for _, h := range hosts {
		if host, port, err := net.SplitHostPort(h); err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("%s address %q is not host:port", what, h)
		}
	}
	return hosts, nil
}

// parseSentinelURL reads the Sentinel form of REDIS_URL (see Open). Its
// options are go-redis ParseFailoverURL's, so they are parsed by it: the
// URL is rewritten into that function's form (the first Sentinel as the
// host, the others as addr=, the primary's name as master_name=) without
// any credential, which are set afterwards.
func parseSentinelURL(u *url.URL) (*redis.FailoverOptions, error) {
	hosts, err := splitHosts(u.Host, "sentinel")
	if err != nil {
		return nil, err
	}
	path := strings.Split(strings.Trim(u.Path, "/"), "/")
	if path[0] == "" || len(path) > 2 {
		return nil, errors.New("the path of a sentinel URL is /<master name>[/<db>]")
	}
	q := u.Query()
	sentinelUser, sentinelPass := q.Get("sentinel_username"), q.Get("sentinel_password")
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	useTLS := u.Scheme == schemeSentinelTLS
	if v := q.Get("tls"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("tls=%q is not a boolean", v)
		}
		useTLS = useTLS || b
		q.Del("tls")
	}
	if q.Has("password") || q.Has("username") || q.Has("master_name") || q.Has("addr") {
		return nil, errors.New("give the servers' credentials as user:password@, the primary's name in the path and the sentinels in the host, not as query options")
	}
	q.Set("master_name", path[0])
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	scheme := "redis"
	if useTLS {
		scheme = "rediss"
	}
	db := "0"
	if len(path) == 2 {
		db = path[1]
	}
	if _, err := strconv.Atoi(db); err != nil {
		return nil, fmt.Errorf("database %q is not a number", db)
	}
	rewritten := url.URL{Scheme: scheme, Host: hosts[0], Path: "/" + db, RawQuery: q.Encode()}
	opt, err := redis.ParseFailoverURL(rewritten.String())
	if err != nil {
		if u.Query().Has("sentinel_password") {
			// An & in the password splits it into options, which
			// go-redis's error would name and quote.
			return nil, errors.New("its options do not parse (write an & in sentinel_password as %26)")
		}
		return nil, urlCause(err)
	}
	opt.SentinelUsername, opt.SentinelPassword = sentinelUser, sentinelPass
	if u.User != nil {
		opt.Username = u.User.Username()
		opt.Password, _ = u.User.Password()
	}
	if opt.TLSConfig != nil {
		// Verify each node against the address it is dialled at, not
		// only the first Sentinel's name (crypto/tls takes the name from
		// the address when ServerName is empty).
		opt.TLSConfig.ServerName = ""
	}
	return opt, nil
}

// checkDelimiters refuses, quoting nothing of it, a REDIS_URL whose
// credentials would not stay in its userinfo. net/url ends the host at
// the first / or ? and the URL at #, so a password (or sentinel_password)
// holding one of them spills into the host, path, query or fragment:
// the errors of net/url and go-redis quote those parts, and go-redis would
// dial a host made of the password. An @ past the host is what such a
// spill leaves, so it is refused, as is a % in the userinfo that starts no
// escape (net/url's error quotes the escape). What remains of the URL
// before the last @ of its host is the userinfo, and no error quotes it.
func checkDelimiters(redisURL string) error {
	_, rest, ok := strings.Cut(redisURL, "://")
	switch {
	case !ok:
		return errors.New("it does not start with scheme://")
	case strings.Contains(rest, "#"):
		return errors.New("it holds a #, which ends a URL: write a # in a user name or password as %23")
	}
	if end := strings.IndexAny(rest, "/?"); end >= 0 && strings.Contains(rest[end:], "@") {
		return errors.New("it holds an @ after its host, as when a user name or password holds a / or a ?: " +
			"write / ? @ in user names and passwords (sentinel_password too) as %2F %3F %40")
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if _, err := url.PathUnescape(rest[:at]); err != nil {
			return errors.New("its user name or password holds a % that starts no escape: write it as %25")
		}
	}
	return nil
}

// urlCause strips what net/url puts in its errors: the whole URL, which
// may hold a password.
func urlCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	// net/url quotes a port that does not parse, and has no type for that
	// error: in a URL that lost its @host, the port it quotes is the
	// password.
	if strings.HasPrefix(err.Error(), "invalid port ") {
		return errors.New("invalid port: not a number (a user name and password, when given, end with an @ before the host)")
	}
	return err
}
