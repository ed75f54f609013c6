package httpapi

import "testing"

// The default callback client refuses, at dial time, every address that is
// not public unicast, whatever name resolved to it.
func TestGuardDial(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:443": false, "[::1]:443": false, "10.0.0.7:443": false, "172.16.3.4:443": false,
		"192.168.1.1:443": false, "169.254.169.254:80": false, "[fe80::1]:443": false, "0.0.0.0:443": false,
		"[fd00::1]:443": false, "93.184.216.34:443": true, "[2606:2800:220:1::1]:443": true,
	} {
		err := guardDial("tcp", addr, nil)
		if (err == nil) != ok {
			t.Errorf("guardDial(%s) = %v, want allowed %v", addr, err, ok)
		}
	}
}
