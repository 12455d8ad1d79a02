// Package mcpgateway is the governed gateway from toolscripts to the tools
// of real MCP servers: it connects to the servers of a standard
// {"mcpServers": …} file with the official Go SDK's client, keeps their tool
// lists current, and makes each tool an executor of a wasmgate Runtime, so
// that every call a script makes is a pipeline action: checked against the
// tool's input schema, refused unless a policy allows it, bounded by a
// per-script call budget and a per-call timeout, and audited (digests only).
package mcpgateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/wasmgate/wasmgate/jstool"
)

// ServerConfig is one entry of the standard {"mcpServers": {NAME: ...}}
// file: a server started as a command and spoken to over its stdio
// (Command, Args, Env), or one reached over streamable HTTP (URL, Headers).
type ServerConfig struct {
	// Command is the program to start (looked up in PATH), Args its
	// arguments, Env the variables it gets beyond the few every process
	// needs (PATH, HOME, USER, …): the rest of wasmgate's environment is
	// not passed on, so that a server sees no secret it was not given.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL is the server's streamable HTTP endpoint (http or https),
	// Headers sent with every request (an Authorization header, say).
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Config is the servers of a configuration file, keyed by server name.
type Config struct {
	Servers map[string]ServerConfig
}

// configFile is the file's shape: other clients' fields (type, disabled,
// timeout, …) are ignored but for type, which must not ask for a
// transport the gateway does not speak.
type configFile struct {
	MCPServers map[string]json.RawMessage `json:"mcpServers"`
}

type serverEntry struct {
	ServerConfig
	Type string `json:"type,omitempty"`
}

// LoadConfig reads a {"mcpServers": {NAME: {"command", "args", "env"} |
// {"url", "headers"}}} file.
//
// # Errors
//
// An error naming the file, and the server and field at fault: the file is
// missing or not JSON, it has no "mcpServers" object, a server name cannot
// be a toolscript namespace (empty, holding "." or "__", or two names that
// camel-case alike), an entry has both or neither of command and url, a url
// that is not an absolute http(s) URL, or a type other than stdio, http or
// streamable-http.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("--mcp-servers: %w", err)
	}
	return parseConfig(path, data)
}

func parseConfig(path string, data []byte) (Config, error) {
	var f configFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return Config{}, fmt.Errorf("--mcp-servers %s: not a JSON object of the form {\"mcpServers\": {NAME: {\"command\": …} | {\"url\": …}}}: %w", path, err)
	}
	if f.MCPServers == nil {
		return Config{}, fmt.Errorf("--mcp-servers %s: no \"mcpServers\" object: want {\"mcpServers\": {NAME: {\"command\": …} | {\"url\": …}}}", path)
	}
	cfg := Config{Servers: map[string]ServerConfig{}}
	var problems []string
	namespaces := map[string]string{} // camel-cased name → server name
	names := make([]string, 0, len(f.MCPServers))
	for name := range f.MCPServers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sc, err := parseServer(name, f.MCPServers[name])
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		ns, _, _ := jstool.ToolPath(name + "__x")
		if other, dup := namespaces[ns]; dup {
			problems = append(problems, fmt.Sprintf("servers %q and %q would both be tools.%s in a script: rename one", other, name, ns))
			continue
		}
		namespaces[ns] = name
		cfg.Servers[name] = sc
	}
	if len(problems) > 0 {
		return Config{}, fmt.Errorf("--mcp-servers %s: %s", path, strings.Join(problems, "; "))
	}
	return cfg, nil
}

// parseServer checks one entry of the file.
func parseServer(name string, raw json.RawMessage) (ServerConfig, error) {
	if err := checkServerName(name); err != nil {
		return ServerConfig{}, err
	}
	var e serverEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return ServerConfig{}, fmt.Errorf("server %q: want an object with \"command\" (and \"args\", \"env\") or \"url\" (and \"headers\"): %w", name, err)
	}
	sc := e.ServerConfig
	switch {
	case sc.Command == "" && sc.URL == "":
		return ServerConfig{}, fmt.Errorf("server %q: neither \"command\" nor \"url\": give the command that starts it, or its streamable HTTP URL", name)
	case sc.Command != "" && sc.URL != "":
		return ServerConfig{}, fmt.Errorf("server %q: both \"command\" and \"url\": give one", name)
	case sc.Command != "" && (len(sc.Headers) > 0):
		return ServerConfig{}, fmt.Errorf("server %q: \"headers\" is for a \"url\" server; a command's server takes \"env\"", name)
	case sc.URL != "" && (len(sc.Args) > 0 || len(sc.Env) > 0):
		return ServerConfig{}, fmt.Errorf("server %q: \"args\" and \"env\" are for a \"command\" server; a url's takes \"headers\"", name)
	}
	switch e.Type {
	case "":
	case "stdio":
		if sc.Command == "" {
			return ServerConfig{}, fmt.Errorf("server %q: \"type\": \"stdio\" needs a \"command\"", name)
		}
	case "http", "streamable-http", "streamableHttp":
		if sc.URL == "" {
			return ServerConfig{}, fmt.Errorf("server %q: \"type\": %q needs a \"url\"", name, e.Type)
		}
	default:
		return ServerConfig{}, fmt.Errorf("server %q: \"type\": %q is not a transport the gateway speaks: want stdio (a \"command\") or http (a streamable HTTP \"url\"; the older SSE transport is not supported)", name, e.Type)
	}
	if sc.URL != "" {
		u, err := url.Parse(sc.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return ServerConfig{}, fmt.Errorf("server %q: \"url\" %q: want an absolute http:// or https:// URL of the server's streamable HTTP endpoint", name, sc.URL)
		}
	}
	return sc, nil
}

// checkServerName refuses a name that cannot be a script's namespace: the
// server's tools are actions SERVER__TOOL, which jstool.ToolPath splits at
// the first "." or "__".
func checkServerName(name string) error {
	ns, _, ok := jstool.ToolPath(name + "__x")
	switch {
	case name == "":
		return errors.New("a server with an empty name: name it (its tools are tools.NAME.… in a script)")
	case strings.Contains(name, ".") || strings.Contains(name, "__"):
		return fmt.Errorf("server %q: a name with \".\" or \"__\" cannot be a script's namespace (tools.NAME.tool): rename it", name)
	case !ok || ns == "":
		return fmt.Errorf("server %q: the name has no letter or digit to make a script's namespace of (tools.NAME.tool): rename it", name)
	}
	return nil
}
