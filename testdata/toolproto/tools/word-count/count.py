# A Python executor class written to the executor contract: its attributes
# are its manifest, its schemas and what it says of itself; wordlib comes
# from the tool's own site directory (pythonPath, python_path, --py-path).
from wordlib import words


class WordCount:
    executor_id = "word_count"
    version = "1.0.0"
    capabilities = ["text"]
    limits = {"timeout_ms": 10000, "max_payload_bytes": 4096, "max_depth": 4, "max_list_items": 100}
    title = "Word count"
    description = "Counts the words of a text and finds the longest."
    input_schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to count"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    output_schema = {
        "type": "object",
        "properties": {"words": {"type": "integer"}, "longest": {"type": "string"}},
        "required": ["words", "longest"],
    }

    def execute(self, req):
        ws = words(req.payload["text"])
        if not ws:
            raise ValueError("no words to count")
        # print() is a diagnostic: it goes to stderr, never to the output.
        print("counted", len(ws), "words")
        return {"words": len(ws), "longest": max(ws, key=len)}
