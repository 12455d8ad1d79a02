// Package weborigin reads the web origins (RFC 6454) browsers send in the
// Origin header, so that the HTTP fronts can tell a page they serve from one
// they refuse, and the command can check the origins an operator lists.
//
// An origin is compared in the form a browser serializes it: scheme, "://",
// host, and ":port" unless the port is the scheme's default, all lower
// case. "https://App.example:443/" and "https://app.example" are the same
// origin.
package weborigin

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Parse returns origin in the form a browser sends it, or an error saying
// what is wrong with it. "null" (the origin of sandboxed frames and local
// files, which any such page sends) is refused: allowing it would allow
// them all.
func Parse(origin string) (string, error) {
	if origin == "null" {
		return "", errors.New(`"null" is the origin of every sandboxed frame and local file, so it cannot be told apart; serve the page from an origin of its own`)
	}
	u, err := url.Parse(origin)
	if err != nil {
		return "", fmt.Errorf("%q is not an origin (scheme://host[:port]): %w", origin, err)
	}
	switch {
	case u.Scheme == "" || u.Host == "":
		return "", fmt.Errorf("%q is not an origin: write scheme://host[:port], as https://app.example", origin)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "", fmt.Errorf("%q is not an origin: an origin is scheme://host[:port] alone, without a path, query or user", origin)
	case strings.Contains(u.Host, "*"):
		return "", fmt.Errorf("%q is not an origin: patterns are not supported, list each origin", origin)
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// Set is a list of origins, compared in their serialized form.
type Set map[string]struct{}

// NewSet returns the set of origins; an entry Parse refuses is left out (the
// command checks its flags with Parse first and names the bad one).
func NewSet(origins []string) Set {
	s := Set{}
	for _, o := range origins {
		if p, err := Parse(o); err == nil {
			s[p] = struct{}{}
		}
	}
	return s
}

// Contains reports whether origin, as a request's Origin header carries it,
// is in s. An origin Parse refuses is in no set.
func (s Set) Contains(origin string) bool {
	p, err := Parse(origin)
	if err != nil {
		return false
	}
	_, ok := s[p]
	return ok
}

// IsLoopback reports whether origin's host is this machine as seen from
// itself: localhost (or a name under .localhost), 127.0.0.0/8 or [::1].
// Such a page is served by a program running here, which could as well
// call the server directly; a web site cannot claim such an origin.
func IsLoopback(origin string) bool {
	p, err := Parse(origin)
	if err != nil {
		return false
	}
	u, err := url.Parse(p)
	if err != nil {
		return false
	}
	return IsLoopbackHost(u.Hostname())
}

// IsLoopbackHost reports whether host (a name or an IP address, without a
// port) is this machine: localhost, a name under .localhost (RFC 6761
// reserves them), 127.0.0.0/8 or ::1.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
