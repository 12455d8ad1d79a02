// Package jshost is the host side of the QuickJS engine: the env.host_*
// imports the engine module may have (QuickJSGlue), the calling sequences
// that load a tool, run a call, a program or a script in it, and the host
// work behind Node's built-ins (crypto, Intl, the node bridge).
//
// It is apart from package host, which every guest needs, so that only a
// program that runs JavaScript (package jstool, and the JavaScript kind
// built on it) links it and what it imports (golang.org/x/text,
// golang.org/x/crypto). Like host, it performs no real I/O for a guest.
package jshost
