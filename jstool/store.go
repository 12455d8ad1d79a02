package jstool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// storeErrorString is the type of the store's sentinel errors, so that they
// can be constants.
type storeErrorString string

func (e storeErrorString) Error() string { return string(e) }

const (
	// ErrPackageNotFound is matched (errors.Is) by an Add of a package or a
	// version the npm registry does not have.
	ErrPackageNotFound = storeErrorString("PACKAGE_NOT_FOUND")
	// ErrNotInstalled is matched by a Get of a package that was never added.
	ErrNotInstalled = storeErrorString("NOT_INSTALLED")
	// ErrInvalidSpec is matched by a spec that is not NAME@VERSION with a
	// valid npm package name and a version made of safe characters.
	ErrInvalidSpec = storeErrorString("INVALID_SPEC")
)

// installTimeout bounds one npm install, on top of the caller's context.
var installTimeout = 60 * time.Second

// Store keeps npm packages installed and bundled, one directory per name@version.
//
// A package lives in Dir/NAME@VERSION (a scoped "@scope/name" as
// "@scope+name", since npm names cannot contain "+"), which holds
// node_modules as npm installed it and bundle.mjs (and, once an MCP
// server's catalog has loaded it, catalog.json: protocol/mcp). VERSION is always the
// exact version npm installed. A spec whose version is a range or a dist-tag
// (^1.2, latest) is recorded in Dir/specs, mapping it to the exact version
// it resolved to when it was added; Get follows that record and never
// resolves the range again.
//
// A package directory appears only by renaming a complete install into
// place, so a failed Add leaves nothing behind, and concurrent Adds of one
// package, in one process or several, each end with the same complete
// directory.
type Store struct{ Dir string }

// Installed is a package in the store.
type Installed struct {
	Name, Version string // Version is the exact version npm installed
	Dir           string // the package's directory in the store
	Bundle        Bundle // the bundled package (also saved as Dir/bundle.mjs)
	PackageJSON   []byte // the installed package's own package.json
}

const (
	bundleFileName = "bundle.mjs"
	specsDirName   = "specs"
	// addDirPrefix starts the directory an Add installs into. A package
	// name cannot start with ".", so it never collides with a package.
	addDirPrefix = ".add-"
)

// DefaultStoreDir is $WASMGATE_TOOLS_DIR if set, else <user cache dir>/wasmgate/tools.
// Without a user cache directory (no $HOME) it falls back to the system
// temporary directory.
func DefaultStoreDir() string {
	if dir := os.Getenv("WASMGATE_TOOLS_DIR"); dir != "" {
		return dir
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "wasmgate", "tools")
}

var (
	// packageNamePart is one part of an npm name (the scope or the name),
	// restricted to what npm accepts for new packages. The leading
	// character excludes ".", "_" and "-", so no part is a path element
	// like ".." or can be read as a command-line flag.
	packageNamePart = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	// exactVersion is a full semver version without build metadata, as npm
	// reports installed versions.
	exactVersion = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
	// versionRange is an exact version, a partial or x-range (1, 1.2, 1.x,
	// *) or either with ^ or ~, optionally with prerelease and build
	// metadata. Comparators, hyphen ranges and || are not accepted: they
	// need spaces or characters a shell would interpret.
	versionRange = regexp.MustCompile(`^([\^~]?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?|\*)$`)
	// distTag is a dist-tag such as latest or next.
	distTag = regexp.MustCompile(`^[a-z][a-z0-9._-]*$`)
)

// ParseSpec splits "NAME@VERSION" (or "@scope/name@VERSION") and checks both
// parts. NAME follows npm's rules for new package names: at most 214
// characters, lowercase letters, digits, ".", "_" and "-", not starting with
// "." or "_", and one "/" only after a scope. VERSION is an exact version
// (1.2.3), a range (^1.2, ~1.2.3, 1.x) or a dist-tag (latest).
//
// # Errors
//
// A spec that breaks a rule gives an error matching ErrInvalidSpec that
// says which rule.
func ParseSpec(spec string) (name, version string, err error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %q: %s", ErrInvalidSpec, spec, fmt.Sprintf(format, args...))
	}
	if spec == "" {
		return "", "", invalid("empty; want NAME@VERSION")
	}
	at := strings.LastIndex(spec, "@")
	if at <= 0 {
		return "", "", invalid("no version; want NAME@VERSION, such as is-number@7.0.0")
	}
	name, version = spec[:at], spec[at+1:]

	if len(name) > 214 {
		return "", "", invalid("package name is %d characters long; npm allows at most 214", len(name))
	}
	parts := []string{name}
	if strings.HasPrefix(name, "@") {
		scope, rest, ok := strings.Cut(name[1:], "/")
		if !ok {
			return "", "", invalid("scoped package name %q has no \"/\"; want @scope/name", name)
		}
		parts = []string{scope, rest}
	}
	for _, part := range parts {
		switch {
		case part == "":
			return "", "", invalid("package name %q has an empty part", name)
		case strings.ContainsRune(part, '/'):
			return "", "", invalid("package name %q has a \"/\" outside a scope", name)
		case strings.ToLower(part) != part:
			return "", "", invalid("package name %q has uppercase letters", name)
		case part[0] == '.' || part[0] == '_':
			return "", "", invalid("package name %q has a part starting with %q", name, part[:1])
		case !packageNamePart.MatchString(part):
			return "", "", invalid("package name %q may only contain a-z, 0-9, \".\", \"_\" and \"-\", starting with a letter or digit", name)
		}
	}
	if name == "node_modules" || name == "favicon.ico" {
		return "", "", invalid("package name %q is reserved by npm", name)
	}

	switch {
	case version == "":
		return "", "", invalid("empty version; want NAME@VERSION, such as is-number@7.0.0")
	case len(version) > 256:
		return "", "", invalid("version is %d characters long; at most 256", len(version))
	case !versionRange.MatchString(version) && !distTag.MatchString(version):
		return "", "", invalid("version %q is not a semver version (1.2.3), range (^1.2, ~1.2.3, 1.x) or dist-tag (latest)", version)
	}
	return name, version, nil
}

// Add installs spec with npm, unless the store has it already, and bundles
// it. An exact version already in the store is returned without running
// npm; a range or dist-tag is resolved by npm on every Add.
//
// npm runs without a shell and with --ignore-scripts, so no package code
// runs at install time, and with at most 60 s for the install.
//
// # Errors
//
//   - an invalid spec matches ErrInvalidSpec;
//   - a package or version the registry does not have matches ErrPackageNotFound;
//   - an install that runs out of time matches context.DeadlineExceeded and
//     names the 60 s limit, one whose ctx ends matches ctx.Err();
//   - a package that does not bundle wraps its *BundleError;
//   - npm missing from PATH wraps exec.ErrNotFound.
func (s Store) Add(ctx context.Context, spec string) (*Installed, error) {
	name, version, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	if exactVersion.MatchString(version) {
		inst, err := s.load(name, version)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return inst, err
		}
	}

	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("add %s@%s: %w", name, version, err)
	}
	work, err := os.MkdirTemp(s.Dir, addDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("add %s@%s: %w", name, version, err)
	}
	// Once renamed into place, work no longer exists and this does nothing.
	defer os.RemoveAll(work)

	// A package.json makes npm install here, not in a project above s.Dir.
	if err := os.WriteFile(filepath.Join(work, "package.json"), []byte(`{"private": true}`+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("add %s@%s: %w", name, version, err)
	}
	if err := npmInstall(ctx, work, name, version); err != nil {
		return nil, err
	}
	exact := installedVersion(work, name)
	if !exactVersion.MatchString(exact) {
		return nil, fmt.Errorf("add %s@%s: the installed node_modules/%s/package.json has no usable version (found %q)", name, version, name, exact)
	}
	bundle, err := BundlePackage(work, name)
	if err != nil {
		return nil, fmt.Errorf("add %s@%s: %w", name, version, err)
	}
	if err := os.WriteFile(filepath.Join(work, bundleFileName), bundle.Source, 0o644); err != nil {
		return nil, fmt.Errorf("add %s@%s: %w", name, version, err)
	}

	final := s.packageDir(name, exact)
	if err := os.Rename(work, final); err != nil {
		// Another Add of this version got there first; its directory is
		// complete, or it would not exist.
		if _, statErr := os.Stat(filepath.Join(final, bundleFileName)); statErr != nil {
			return nil, fmt.Errorf("add %s@%s: %w", name, version, err)
		}
	}
	if exact != version {
		if err := s.recordSpec(name, version, exact); err != nil {
			return nil, fmt.Errorf("add %s@%s: %w", name, version, err)
		}
	}
	return s.load(name, exact)
}

// Get returns a package Add installed, without the network.
//
// # Errors
//
// A package that is not in the store gives an error matching
// ErrNotInstalled, with the command that adds it.
func (s Store) Get(spec string) (*Installed, error) {
	name, version, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	exact := version
	if !exactVersion.MatchString(version) {
		exact, err = s.resolveSpec(name, version)
	}
	var inst *Installed
	if err == nil {
		inst, err = s.load(name, exact)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s@%s is not in the tool store %s; run: wasmgate tools add %s@%s",
			ErrNotInstalled, name, version, s.Dir, name, version)
	}
	return inst, err
}

// packageDir is where the exact version of name lives.
func (s Store) packageDir(name, exact string) string {
	return filepath.Join(s.Dir, strings.Replace(name, "/", "+", 1)+"@"+exact)
}

// load reads an installed package; an error matching fs.ErrNotExist means
// it is not installed.
func (s Store) load(name, exact string) (*Installed, error) {
	dir := s.packageDir(name, exact)
	source, err := os.ReadFile(filepath.Join(dir, bundleFileName))
	if err != nil {
		return nil, err
	}
	pkg, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
	if err != nil {
		// Not %w: a damaged entry must not read as "not installed", which
		// would send Add to install over it.
		return nil, fmt.Errorf("tool store entry %s is damaged (%v); remove it and add the package again", dir, err)
	}
	return &Installed{
		Name:        name,
		Version:     exact,
		Dir:         dir,
		Bundle:      Bundle{Source: source, Entry: name + "@" + exact},
		PackageJSON: pkg,
	}, nil
}

// specFile records which exact version name@version resolved to. Query
// escaping keeps the ^, ~, * and / of a spec out of the file name.
func (s Store) specFile(name, version string) string {
	return filepath.Join(s.Dir, specsDirName, url.QueryEscape(name+"@"+version))
}

func (s Store) recordSpec(name, version, exact string) error {
	dir := filepath.Join(s.Dir, specsDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, addDirPrefix)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(exact + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// Renaming replaces an older record whole, never half-written.
	return os.Rename(tmp.Name(), s.specFile(name, version))
}

func (s Store) resolveSpec(name, version string) (string, error) {
	raw, err := os.ReadFile(s.specFile(name, version))
	if err != nil {
		return "", err
	}
	exact := strings.TrimSpace(string(raw))
	if !exactVersion.MatchString(exact) {
		return "", fmt.Errorf("tool store record %s holds %q, not a version", s.specFile(name, version), exact)
	}
	return exact, nil
}

// npmErrorCode finds the error code npm 7 and later print on failure
// ("npm error code E404", formerly "npm ERR! code E404").
var npmErrorCode = regexp.MustCompile(`(?m)^npm (?:error|ERR!) code (\S+)`)

// npmInstall installs name@version into dir.
func npmInstall(ctx context.Context, dir, name, version string) error {
	spec := name + "@" + version
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("add %s: npm is needed to install packages and is not on PATH: %w", spec, err)
	}
	installCtx, cancel := context.WithTimeout(ctx, installTimeout)
	defer cancel()

	cmd := exec.CommandContext(installCtx, npm, "install",
		"--ignore-scripts", "--omit=dev", "--no-audit", "--no-fund",
		"--no-package-lock", "--no-save", "--no-update-notifier",
		"--loglevel=error", "--prefix", dir, "--", spec)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Do not wait on a grandchild that holds stderr after npm is killed.
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if err == nil {
		return nil
	}

	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("add %s: npm install stopped: %w", spec, ctx.Err())
	case errors.Is(installCtx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("add %s: npm install did not finish within the %d s install limit: %w",
			spec, int(installTimeout.Seconds()), context.DeadlineExceeded)
	}
	var code string
	if m := npmErrorCode.FindSubmatch(stderr.Bytes()); m != nil {
		code = string(m[1])
	}
	switch code {
	case "E404":
		return fmt.Errorf("%w: npm has no package %s", ErrPackageNotFound, spec)
	case "ETARGET":
		return fmt.Errorf("%w: npm has no version %s of package %s", ErrPackageNotFound, version, name)
	}
	return fmt.Errorf("add %s: npm install failed (%w): %s", spec, err, npmErrors(stderr.String()))
}

// npmErrors is what npm said on stderr, one line per error line, without
// the pointer to npm's debug log.
func npmErrors(stderr string) string {
	var lines []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(line, "npm error"), "npm ERR!"))
		if line == "" || strings.HasPrefix(line, "A complete log of this run") {
			continue
		}
		lines = append(lines, line)
	}
	const most = 20
	if len(lines) > most {
		lines = append(lines[:most], fmt.Sprintf("(%d more lines)", len(lines)-most))
	}
	if len(lines) == 0 {
		return "no output on stderr"
	}
	return strings.Join(lines, "; ")
}
