package tscheck

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// pinnedIntegrity is the registry's dist.integrity of each platform package
// @typescript/typescript-PLATFORM@Version, from `npm view
// @typescript/typescript-PLATFORM@7.0.2 dist.integrity`. A download is used
// only when its sha512 is the one pinned here; a platform missing here cannot
// type-check.
var pinnedIntegrity = map[string]string{
	"linux-x64":    "sha512-EYdf2cNg7rgCWJnxCdJ+F3V39O8ihb37eHAu1LK8oAFizgTQbPOK7zHHXbPt8rX24COqODXeI3sIf0fCXG7H/A==",
	"linux-arm64":  "sha512-Qh4eU4/y3yDjnfjjyPYihMj5/ODIlmt+Bzu17OI+fiSRDW57QmU5SiN63exPRNJPKUzcc1INa1NXdrJ+MqHjUQ==",
	"darwin-x64":   "sha512-SZ9xZInqApNlNGc9s0W1VSsktYSOe9cFqNOIqmN1Gs8SmkjKZYFt017G4VwPxASInODuAdbTW7sXiFUf893RgA==",
	"darwin-arm64": "sha512-gowzar9MwS/aRWp6f3a4KUqzRjAZjOsmGNCM6LcTgXum+dBfgsBVMN+AgvOCCbguXyick6LJhpBszxMebJ8syA==",
	"win32-x64":    "sha512-0BQ3HkAHHlKLSp1qRvf3SUhGpGsDuhB/jgFw75guyqbxJqEaS0Cw/VFO8i2nHglJUzQCRtMMR/IBAKE3ETMC4g==",
	"win32-arm64":  "sha512-Gyl1Vy6OsWesLzmq+EP0Fb7b4Nid5232AvcA2SFcdYreldpNtYFFofPjnt62y9hQy7VTaZp65ICJjuAQRaVcIQ==",
}

const (
	// defaultRegistry is where the platform package is fetched from unless
	// $WASMGATE_NPM_REGISTRY or $npm_config_registry names another.
	defaultRegistry = "https://registry.npmjs.org"
	// maxTarball bounds a download: the real packages are about 10 MB, so a
	// registry sending more is not sending them.
	maxTarball = 64 << 20
	// maxExtracted bounds the unpacked package (about 27 MB), so a tarball
	// that passed its hash but is not what we think cannot fill the disk.
	maxExtracted = 256 << 20
	// fetchDirPrefix starts the directory a download is extracted into
	// before it is renamed into place; it never collides with a
	// Version-platform directory.
	fetchDirPrefix = ".fetch-"
)

// downloadTimeout bounds one download of the platform package, on top of the
// caller's context.
var downloadTimeout = 5 * time.Minute

// ensureLocks serialises Ensure per target directory within the process, so
// concurrent first uses download the package once. Across processes the
// rename into place keeps the directory whole.
var ensureLocks sync.Map // directory → *sync.Mutex

// Ensure returns the path of the compiler binary, downloading the platform
// package from the npm registry (https://registry.npmjs.org, or
// $WASMGATE_NPM_REGISTRY, else $npm_config_registry, if set), verifying its
// pinned sha512 before anything of it is written into place, extracting it
// into Dir/<Version>-<platform>/ atomically (temp dir + rename, so concurrent
// callers and a failed download leave nothing half-made), and making the
// binary executable.
//
// # Errors
//
// A platform without a pinned hash is an error that says so (and that
// --no-check skips checking); so are a failed download, a tarball whose
// sha512 is not the pinned one, and one without the compiler in it.
func (c Checker) Ensure(ctx context.Context) (string, error) {
	platform, err := npmPlatform(runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return "", err
	}
	if c.Dir == "" {
		return "", errors.New("tscheck: the checker has no directory to keep the compiler in (Checker.Dir is empty)")
	}
	final := filepath.Join(c.Dir, Version+"-"+platform)
	bin := filepath.Join(final, binaryPath(platform))
	if isFile(bin) {
		return bin, nil
	}

	lock, _ := ensureLocks.LoadOrStore(filepath.Clean(c.Dir), new(sync.Mutex))
	lock.(*sync.Mutex).Lock()
	defer lock.(*sync.Mutex).Unlock()
	if isFile(bin) { // another goroutine fetched it while we waited
		return bin, nil
	}

	tarball, err := download(ctx, platform)
	if err != nil {
		return "", err
	}
	if err := verifyIntegrity(tarballName(platform), tarball, pinnedIntegrity[platform]); err != nil {
		return "", err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return "", fmt.Errorf("tscheck: %w", err)
	}
	work, err := os.MkdirTemp(c.Dir, fetchDirPrefix)
	if err != nil {
		return "", fmt.Errorf("tscheck: %w", err)
	}
	defer os.RemoveAll(work) // gone after the rename; removes a failed attempt
	if err := extract(tarball, work); err != nil {
		return "", fmt.Errorf("tscheck: %s: %w", tarballName(platform), err)
	}
	workBin := filepath.Join(work, binaryPath(platform))
	if !isFile(workBin) {
		return "", fmt.Errorf("tscheck: %s has no compiler at package/%s", tarballName(platform), filepath.ToSlash(binaryPath(platform)))
	}
	if err := os.Chmod(workBin, 0o755); err != nil {
		return "", fmt.Errorf("tscheck: %w", err)
	}
	if err := os.Rename(work, final); err != nil {
		// Another process renamed its complete copy into place first.
		if isFile(bin) {
			return bin, nil
		}
		return "", fmt.Errorf("tscheck: %w", err)
	}
	return bin, nil
}

// npmPlatform is the platform part of the name of TypeScript's package for
// goos/goarch (linux-x64 for linux/amd64), or an error if no hash is pinned
// for it.
func npmPlatform(goos, goarch string) (string, error) {
	system, arch := goos, goarch
	if goos == "windows" {
		system = "win32"
	}
	switch goarch {
	case "amd64":
		arch = "x64"
	case "386":
		arch = "ia32"
	}
	platform := system + "-" + arch
	if _, ok := pinnedIntegrity[platform]; !ok {
		return "", fmt.Errorf("tscheck: no pinned sha512 of TypeScript %s's compiler for %s/%s (npm package @typescript/typescript-%s@%s), so scripts cannot be type-checked on this platform; --no-check skips checking",
			Version, goos, goarch, platform, Version)
	}
	return platform, nil
}

// binaryPath is the compiler's path inside the package (without the leading
// package/).
func binaryPath(platform string) string {
	if strings.HasPrefix(platform, "win32-") {
		return filepath.Join("lib", "tsc.exe")
	}
	return filepath.Join("lib", "tsc")
}

// tarballName is the file name of the platform package's tarball.
func tarballName(platform string) string {
	return "typescript-" + platform + "-" + Version + ".tgz"
}

// registryURL is the npm registry to fetch from, without a trailing slash.
func registryURL() string {
	for _, name := range []string{"WASMGATE_NPM_REGISTRY", "npm_config_registry"} {
		if url := os.Getenv(name); url != "" {
			return strings.TrimRight(url, "/")
		}
	}
	return defaultRegistry
}

// download fetches the platform package's tarball into memory.
func download(ctx context.Context, platform string) ([]byte, error) {
	url := registryURL() + "/@typescript/typescript-" + platform + "/-/" + tarballName(platform)
	ctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("tscheck: download %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tscheck: download %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("tscheck: download %s: the registry answered %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTarball+1))
	if err != nil {
		return nil, fmt.Errorf("tscheck: download %s: %w", url, err)
	}
	if len(body) > maxTarball {
		return nil, fmt.Errorf("tscheck: download %s: larger than %d MB; the package is about 10 MB", url, maxTarball>>20)
	}
	return body, nil
}

// verifyIntegrity checks data against an npm integrity string
// ("sha512-BASE64"), naming the file in its error.
func verifyIntegrity(name string, data []byte, integrity string) error {
	want, ok := strings.CutPrefix(integrity, "sha512-")
	if !ok {
		return fmt.Errorf("tscheck: pinned integrity %q of %s is not sha512-BASE64", integrity, name)
	}
	sum := sha512.Sum512(data)
	got := base64.StdEncoding.EncodeToString(sum[:])
	if got != want {
		return fmt.Errorf("tscheck: %s (%d bytes) has sha512-%s, want the pinned sha512-%s; refusing to use it", name, len(data), got, want)
	}
	return nil
}

// extract writes the regular files under package/ in the gzipped tarball
// into dir, without the package/ prefix. An entry whose path would leave dir,
// or a link, is an error: the registry's packages have neither.
func extract(tarball []byte, dir string) error {
	zr, err := gzip.NewReader(bytes.NewReader(tarball))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name, ok := strings.CutPrefix(path.Clean(hdr.Name), "package/")
		if !ok || !filepath.IsLocal(name) {
			return fmt.Errorf("entry %q is not inside package/", hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			continue // made for the files in it
		case tar.TypeReg:
		default:
			return fmt.Errorf("entry %q is not a regular file (type %q)", hdr.Name, hdr.Typeflag)
		}
		total += hdr.Size
		if total > maxExtracted {
			return fmt.Errorf("unpacks to more than %d MB", maxExtracted>>20)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := writeFile(target, tr, 0o644); err != nil {
			return err
		}
	}
}

// writeFile copies r into a new file at target.
func writeFile(target string, r io.Reader, perm fs.FileMode) error {
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// isFile reports whether name is a regular file.
func isFile(name string) bool {
	info, err := os.Stat(name)
	return err == nil && info.Mode().IsRegular()
}
