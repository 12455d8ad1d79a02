package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// suiteCheck is one check of the compliance run and what it found.
type suiteCheck struct {
	name    string
	passed  bool
	message string
}

// tpmjsComplianceSuite makes, in order, the 15 checks of the HTTP executor
// protocol authors' compliance suite (npm @tpmjs/executor-test 0.2.0: 8
// core, 7 standard) against base, the way that suite makes them: every
// request carries X-TPMJS-Protocol-Version 1.1; health, info, CORS and
// preflight requests go without a key; /execute-tool requests carry key
// when one is given. It executes the suite's fixture,
// @tpmjs/tools-normalize-whitespace@0.2.0 normalizeWhitespaceTool, and a
// package that does not exist. The suite is not on the registry this
// project reaches, so its checks are restated here from its source.
func tpmjsComplianceSuite(base, key string) []suiteCheck {
	client := &http.Client{Timeout: 2 * time.Minute}
	type answer struct {
		status int
		header http.Header
		body   map[string]any
		err    error
	}
	send := func(method, path, body string, withKey bool) answer {
		var rd *strings.Reader
		if body != "" {
			rd = strings.NewReader(body)
		} else {
			rd = strings.NewReader("")
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			return answer{err: err}
		}
		if method != http.MethodOptions {
			req.Header.Set("X-TPMJS-Protocol-Version", "1.1")
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if withKey && key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := client.Do(req)
		if err != nil {
			return answer{err: err}
		}
		defer resp.Body.Close()
		a := answer{status: resp.StatusCode, header: resp.Header}
		if method != http.MethodOptions {
			// A body that is not JSON fails the checks that read it, as
			// response.json() would throw.
			a.err = json.NewDecoder(resp.Body).Decode(&a.body)
		}
		return a
	}
	fixture := `{"packageName":"@tpmjs/tools-normalize-whitespace","name":"normalizeWhitespaceTool","version":"0.2.0","params":{"text":"hello   world"}}`
	missing := func(pkg string) string {
		return `{"packageName":"` + pkg + `","name":"nonexistentTool","version":"0.0.0","params":{}}`
	}
	typed := func(b map[string]any) bool {
		_, stage := b["errorStage"].(string)
		_, code := b["errorCode"].(string)
		_, retry := b["retryable"].(bool)
		return stage && code && retry
	}
	check := func(name string, a answer, ok bool, why string) suiteCheck {
		if a.err != nil {
			return suiteCheck{name, false, "request failed: " + a.err.Error()}
		}
		if !ok {
			return suiteCheck{name, false, why}
		}
		return suiteCheck{name: name, passed: true}
	}
	var checks []suiteCheck

	// Core.
	a := send(http.MethodGet, "/health", "", false)
	checks = append(checks, check("GET /health returns 200", a, a.status == 200, fmt.Sprintf("expected status 200, got %d", a.status)))
	checks = append(checks, check("GET /health includes protocolVersion", a, a.body["protocolVersion"] != nil && a.body["protocolVersion"] != "", "response missing protocolVersion"))
	checks = append(checks, check("GET /health includes implementationVersion", a, a.body["implementationVersion"] != nil && a.body["implementationVersion"] != "", "response missing implementationVersion"))
	a = send(http.MethodPost, "/execute-tool", fixture, true)
	checks = append(checks, check("POST /execute-tool accepts valid request", a, a.status == 200 || (a.status == 401 && key == ""), fmt.Sprintf("expected status 200, got %d", a.status)))
	success, isBool := a.body["success"].(bool)
	_, timed := a.body["executionTimeMs"].(float64)
	_, hasOutput := a.body["output"]
	checks = append(checks, check("POST /execute-tool returns structured response", a,
		isBool && timed && (!success || hasOutput) && (success || (a.body["error"] != nil && typed(a.body))),
		fmt.Sprintf("not a structured response: %v", a.body)))
	a = send(http.MethodPost, "/execute-tool", missing("@tpmjs/nonexistent-package-12345"), true)
	checks = append(checks, check("POST /execute-tool returns error for invalid tool", a,
		a.body["success"] == false && a.body["error"] != nil && typed(a.body),
		fmt.Sprintf("expected an error response with code for a nonexistent package: %v", a.body)))
	a = send(http.MethodGet, "/health", "", false)
	checks = append(checks, check("CORS headers present", a, a.header.Get("Access-Control-Allow-Origin") != "", "missing Access-Control-Allow-Origin"))
	a = send(http.MethodOptions, "/execute-tool", "", false)
	checks = append(checks, check("OPTIONS preflight works", a,
		(a.status == 200 || a.status == 204) && a.header.Get("Access-Control-Allow-Methods") != "" && a.header.Get("Access-Control-Allow-Headers") != "",
		fmt.Sprintf("preflight answered %d with methods %q, headers %q", a.status, a.header.Get("Access-Control-Allow-Methods"), a.header.Get("Access-Control-Allow-Headers"))))

	// Standard.
	a = send(http.MethodGet, "/info", "", false)
	checks = append(checks, check("GET /info returns 200", a, a.status == 200, fmt.Sprintf("expected status 200, got %d", a.status)))
	caps, _ := a.body["capabilities"].(map[string]any)
	var absent []string
	for _, k := range []string{"isolation", "executionModes", "maxExecutionTimeMs", "maxRequestBodyBytes"} {
		if caps[k] == nil {
			absent = append(absent, k)
		}
	}
	checks = append(checks, check("GET /info includes capabilities", a, caps != nil && len(absent) == 0, fmt.Sprintf("missing capability fields %v", absent)))
	checks = append(checks, check("GET /info includes protocolVersion", a, a.body["protocolVersion"] != nil && a.body["protocolVersion"] != "", "response missing protocolVersion"))
	iso, _ := caps["isolation"].(string)
	checks = append(checks, check("capabilities.isolation is valid", a, slices.Contains([]string{"none", "process", "container", "vm"}, iso), "invalid isolation level "+iso))
	noAuth := send(http.MethodPost, "/execute-tool", fixture, false)
	authOK := noAuth.status != 401 || key == ""
	why := ""
	if !authOK {
		withAuth := send(http.MethodPost, "/execute-tool", fixture, true)
		authOK = withAuth.status == 200
		why = fmt.Sprintf("request with API key still failed: %d", withAuth.status)
	}
	checks = append(checks, check("Authentication enforced when configured", noAuth, authOK, why))
	maxMs, _ := caps["maxExecutionTimeMs"].(float64)
	checks = append(checks, check("Execution timeout enforcement", a, maxMs >= 60000, fmt.Sprintf("maxExecutionTimeMs should be at least 60000, got %v", maxMs)))
	a = send(http.MethodPost, "/execute-tool", missing("@tpmjs/nonexistent-package-xyz-12345"), true)
	code, _ := a.body["errorCode"].(string)
	checks = append(checks, check("Structured error codes", a, typed(a.body) && slices.Contains([]string{
		"INVALID_REQUEST", "AUTHENTICATION_REQUIRED", "PACKAGE_IMPORT_FAILED", "TOOL_NOT_FOUND",
		"TOOL_CONFIGURATION_REQUIRED", "INVALID_TOOL", "SCHEMA_UNAVAILABLE", "TOOL_EXECUTION_FAILED",
		"EXECUTOR_UNAVAILABLE", "EXECUTION_TIMEOUT", "EXECUTOR_INTERNAL_ERROR"}, code),
		fmt.Sprintf("non-standard or missing error code %q: %v", code, a.body)))
	return checks
}

// emptyRegistry is an npm registry that has no packages, so that a server
// under test answers PACKAGE_NOT_FOUND without the network. Its URL ends
// in "/", as npm_config_registry wants.
func emptyRegistry(t *testing.T) string {
	t.Helper()
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"Not found"}`)
	}))
	t.Cleanup(reg.Close)
	return reg.URL + "/"
}
