"""A Python executor class written to the executor contract: its attributes
are its manifest, execute(self, req) gets the whole request. It imports its
own package (wordkit) and a pure-Python dependency from site/ (given with
--py-path)."""

from wordkit import count_words


class WordCount:
    executor_id = "word_count"
    version = "1.0.0"
    capabilities = ["text"]
    limits = {"timeout_ms": 5000, "max_payload_bytes": 65536, "max_depth": 4, "max_list_items": 100}
    title = "Word count"
    description = "Counts the words of a text, leaving out English stop words."
    input_schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "top": {"type": "integer", "minimum": 1}},
        "required": ["text"],
    }

    def execute(self, req):
        counts = count_words(req.payload["text"])
        top = req.payload.get("top", 3)
        return {
            "words": sum(counts.values()),
            "distinct": len(counts),
            "top": [[w, n] for w, n in counts.most_common(top)],
        }
