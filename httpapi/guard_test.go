package httpapi

import "testing"

// The default callback client refuses, at dial time, every address that is
// not public unicast, whatever name resolved to it.
func TestGuardDial(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:443": false, "[::1]:443": false, "10.0.0.7:443": false, "172.16.3.4:443": false,
		"192.168.1.1:443": false, "169.254.169.254:80": false, "[fe80::1]:443": false, "0.0.0.0:443": false,
		"[fd00::1]:443": false, "93.184.216.34:443": true, "[2606:2800:220:1::1]:443": true,
		// IANA's special-purpose ranges beyond loopback, private and
		// link-local, and their IPv6 forms.
		"100.64.0.1:443": false, "100.100.100.200:80": false, "100.127.255.255:443": false,
		"198.18.0.1:443": false, "198.19.255.255:443": false, "192.0.0.8:443": false, "192.0.2.1:443": false,
		"240.0.0.1:443": false, "255.255.255.255:443": false, "224.0.0.251:5353": false,
		"[64:ff9b::a9fe:a9fe]:80": false, "[64:ff9b::808:808]:443": false,
		"[::a9fe:a9fe]:80": false, "[::6440:1]:443": false,
		"[::ffff:100.64.0.1]:443": false, "[::ffff:169.254.169.254]:80": false, "[::ffff:198.18.0.1]:443": false,
		"[::ffff:127.0.0.1]:443": false, "[2001:db8::1]:443": false, "[2002:a9fe:a9fe::1]:443": false,
		"[2001::1]:443": false, "[ff02::1]:443": false,
		"100.63.255.255:443": true, "100.128.0.1:443": true, "198.20.0.1:443": true, "8.8.8.8:8443": true,
		"[::ffff:8.8.8.8]:443": true,
	} {
		err := guardDial("tcp", addr, nil)
		if (err == nil) != ok {
			t.Errorf("guardDial(%s) = %v, want allowed %v", addr, err, ok)
		}
	}
}

// Only TCP is dialled.
func TestGuardDialNetworks(t *testing.T) {
	for network, ok := range map[string]bool{"tcp": true, "tcp4": true, "tcp6": true, "udp": false, "udp4": false, "unix": false} {
		if err := guardDial(network, "93.184.216.34:443", nil); (err == nil) != ok {
			t.Errorf("guardDial(%s) = %v, want allowed %v", network, err, ok)
		}
	}
}
