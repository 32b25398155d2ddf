"""chunk-eval: measure chunking strategies on your own documents, from one command.

    chunk-eval DOCS QUESTIONS [--strategy SPEC]... [--k 5] [--budget TOKENS] [--json OUT.json] [--html OUT.html]
    python -m course_lib.chunk_eval DOCS QUESTIONS ...

Taught in notebooks/11_your_documents.ipynb (the capstone). The method is notebook 08's:
chunk every document with each strategy, embed every chunk, put all chunks of a strategy in one
exact cosine index, search it with each question, and score the ranking against the question's
reference text (its quote, found in the documents, or its character spans).

Metrics (names and units of `course_lib.evaluation.METRIC_NAMES`, fractions in JSON, percent in the
terminal table). A chunk is relevant to a question when it shares at least one character with the
question's reference text; its grade is the share of the reference characters it holds.
- `recall_at_k`: share of questions with a relevant chunk among the first k;
- `mrr`: mean of 1 / rank of the first relevant chunk in the whole ranking (0 if no chunk is relevant);
- `ndcg_at_10`: nDCG of the first 10 chunks with those grades;
- `span_recall`, `span_precision`, `iou`: Chroma's character metrics (`course_lib.evaluation.span_scores`)
  of the first k chunks, or, with `--budget`, of the chunks that fit the budget (`budget_cutoff`).
Costs per strategy: `chunks`, `mean_tokens` (cl100k tokens per chunk), `index_bytes` (the float32
vectors: chunks x dimensions x 4 bytes) and `seconds` (chunking, embedding and scoring in this run;
late strategies share each document's encoding equally; vectors read from the cache cost nothing).

Embedding: a chunk that fits the model (at most its window minus the special tokens: 510 WordPiece
tokens for all-MiniLM-L6-v2) is encoded on its own; a longer one is embedded by pooling its token
vectors over overlapping windows (`course_lib.late` applied to the chunk alone), never truncated.
`late:` strategies encode each document once (long late chunking in 512-token windows) and pool
every late strategy's chunks from those token vectors. `headers:` strategies embed each chunk
prefixed with its document's name and heading path (the chunk's offsets still point at the source).
Vectors are cached on disk by model and text hash, so a repeated run embeds only new chunks.

The package is split by job: `inputs` (documents, questions, quote matching), `run` (the
pipeline: chunk, plan, embed, score), `report` (table, figure, HTML) and `cli` (the command).
Embedding and the vector cache are `course_lib.embed`'s; ranking and graded relevance are
`course_lib.evaluation`'s.
"""

from course_lib.chunk_eval.cli import main
from course_lib.chunk_eval.inputs import (
    TEXT_SUFFIXES,
    ChunkEvalError,
    Document,
    Question,
    read_documents,
    read_questions,
)
from course_lib.chunk_eval.report import format_table, render_html
from course_lib.chunk_eval.run import DEFAULT_SIZES, EvalReport, StrategyResult, default_strategies, evaluate
from course_lib.embed import Embedder, SentenceTransformerEmbedder, VectorCache

__all__ = [
    "DEFAULT_SIZES",
    "TEXT_SUFFIXES",
    "ChunkEvalError",
    "Document",
    "Embedder",
    "EvalReport",
    "Question",
    "SentenceTransformerEmbedder",
    "StrategyResult",
    "VectorCache",
    "default_strategies",
    "evaluate",
    "format_table",
    "main",
    "read_documents",
    "read_questions",
    "render_html",
]
