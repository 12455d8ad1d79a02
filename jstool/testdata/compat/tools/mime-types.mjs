import mime from "mime-types";

export function execute() {
  return {
    lookup: ["a.json", "x.html", "photo.JPG", "archive.tar.gz", "file.unknownext", "README.md", "font.woff2"].map((f) => mime.lookup(f)),
    contentType: ["json", "text/html", "markdown", "application/octet-stream"].map((t) => mime.contentType(t)),
    extension: ["text/html", "application/json", "image/svg+xml", "nope/nope"].map((t) => mime.extension(t)),
    charset: ["text/plain", "application/json", "image/png"].map((t) => mime.charset(t)),
  };
}
