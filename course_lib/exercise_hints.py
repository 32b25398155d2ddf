"""Hints for the exercises of the course notebooks, in tiers: the first wrong try reveals the first one.

Kept here, not in the notebooks' check cells, so a learner does not read them before trying
(`course_lib.exercises` looks an exercise up here when its check gives no `hint=`). Each tier says a
little more than the one before; the last comes close to the solution. `EXPECTED` holds the values a
check compares with that the learner should find, not read, so they stay out of the check cells.
"""

from __future__ import annotations

__all__ = ["EXPECTED", "HINTS"]

HINTS: dict[str, tuple[str, ...]] = {
    # notebooks/00_start_here.ipynb
    "Exercise 0.1": (
        "Show your chunks (show_chunks(text, my_chunks(text))) and read the message: a chunk over 60 tokens "
        "needs a smaller size; a heading on the last line of a chunk belongs to the next one, and changing "
        "`size` alone rarely moves it there.",
        "The default separators know paragraphs and sentences, not headings. Print SEPARATORS: one preset "
        "cuts before lines that start with '#'. Try it at a few sizes: the merge step can still glue a short "
        "heading to the chunk before it when both fit.",
        'recursive_chunks(text, 60, separators="markdown") passes (at 40 or 50 tokens it does not); '
        "markdown_chunks, which keeps every section apart (notebook 07), passes at any size.",
    ),
    # notebooks/01_why_chunking.ipynb
    "Exercise 1.1": (
        "Count the model's own tokens (WordPiece), not characters or cl100k_base tokens, and remember the "
        "two special tokens the model adds around every input.",
        "len(m.tokenizer(text, add_special_tokens=False)['input_ids']) + 2 must be at most m.max_seq_length.",
    ),
    "Exercise 1.2": (
        "Turn the budget into tokens first: cost = tokens per question x 30,000 x price / 1,000,000. Then "
        "measure each k: the mean tokens sent, and for how many questions the top k hold reference text.",
        "Rank the chunks once (np.argsort(-(question_vecs @ chunk_vecs.T), axis=1)); for k = 1, 2, ... add "
        "the n_tokens of row[:k] and test overlaps(chunks[i], q['references']) for i in row[:k].",
        "Keep the affordable k with the most questions found; stop at the first k whose mean cost passes the "
        "budget (the cost only grows with k).",
    ),
    "Exercise 1.3": (
        "The best chunk is the one whose vector has the highest cosine similarity with the question's vector.",
        "The vectors are normalised, so a dot product is the cosine: vectors @ embed([question])[0] gives one "
        "score per chunk; return chunks[int(np.argmax(scores))].",
    ),
    # notebooks/02_tokens_vs_characters.ipynb
    "Exercise 2.1": (
        "It is one ratio for the whole set: total characters over total tokens, not the mean of per-text "
        "ratios, and each text is counted on its own, not joined to the others.",
        "Two branches: for \"WordPiece\" count the input_ids of wordpiece(texts, add_special_tokens=False) "
        "(without that flag every text gains [CLS] and [SEP]); otherwise len(get_encoding(tokenizer)"
        ".encode_ordinary(text)) for each text.",
        "Add up len(text) over the texts as given, add up the token counts of the right branch, then divide.",
    ),
    "Exercise 2.2": (
        "For each item, how many times the chars / 4 estimate does the true count need? Then take the share "
        "`coverage` of those factors.",
        "needed = tokens / (chars / 4); return np.quantile(needed, coverage) - 1.",
    ),
    "Exercise 2.3": (
        "Words of plain prose are cheap for cl100k_base; what is rare in its training text costs more tokens.",
        "Use codes with digits and separators (4471-09-B/22), legal references (RD 842/2002) and decimals.",
    ),
    # notebooks/03_fixed_size_and_overlap.ipynb
    "Exercise 3.1": (
        "Keep a running byte position: each token adds the length of its bytes "
        "(enc.decode_single_token_bytes). A token starts inside a character when the byte at that position "
        "continues a UTF-8 sequence.",
        "Encode the text once (data = text.encode('utf-8')). At byte position `byte`, the token starts a "
        "character unless data[byte] & 0xC0 == 0x80; the end of the data (byte == len(data)) counts as a start.",
        "For a character start, the offset is len(data[:byte].decode('utf-8')); otherwise append None. Then "
        "byte += len(enc.decode_single_token_bytes(t)).",
    ),
    "Exercise 3.1 (windows)": (
        "Walk from the start: a window ends `size` characters after its start or at the end of the text, "
        "whichever comes first, and the walk stops once a window has reached the end.",
        "The next window starts `overlap` characters before the previous one ended (end - overlap), so the "
        "stride is size - overlap; an empty text gives an empty list.",
        "spans, start = [], 0; while start < len(text): end = min(start + size, len(text)); append (start, end); "
        "break if end == len(text); start = end - overlap.",
    ),
    "Exercise 3.4": (
        "Look at the two characters on either side of each cut; the ends of the text never split anything.",
        "A cut at p splits a word when 0 < p < len(text) and text[p - 1] and text[p] are both letters or "
        "digits (str.isalnum).",
    ),
    "Exercise 3.2": (
        "Build the spans one at a time: each starts where the last one ended. Only the end of a window needs "
        "care, when it falls between two letters.",
        "end = min(start + size, len(text)); if text[end - 1] and text[end] are both letters or digits, move "
        "end to text.rfind(' ', start, end) + 1, unless that space is at `start` or missing.",
    ),
    "Exercise 3.3": (
        "Try overlaps from 0 upwards and stop at the first that works.",
        "for m in range(size): if any chunk c of fixed_size_chunks(text, size, m) has claim in c.text and "
        "exception in c.text, return m.",
    ),
    # notebooks/04_recursive_splitting.ipynb
    "Exercise 4.1": (
        "A cut goes where a match starts (m.start()), so the separator opens the next piece and nothing is "
        "dropped; a match that starts at `a` is no cut.",
        "Collect the cut positions inside the span, then pair them up: from a to the first cut, cut to cut, "
        "and the last cut to b.",
        "cuts = [m.start() for m in regex.compile(separator).finditer(text, a, b) if m.start() > a]; "
        "return list(zip([a, *cuts], [*cuts, b])).",
    ),
    "Exercise 4.1 (first split)": (
        "Try the separators in order, highest first, and stop at the first one whose split_on gives two "
        "pieces or more; one that does not occur in the span (or only at `a`) gives one piece.",
        "Return that separator's pieces with the list after it, separators[level + 1:]; (None, []) when "
        "none cuts.",
    ),
    "Exercise 4.1 (no merge)": (
        "First ask whether the whole span fits (tokens(text, a, b) <= size): then it is one fragment, as it is.",
        "Otherwise pieces, lower = first_split(...): keep a piece that fits, and pass a piece that does not to "
        "split_without_merge again, with `lower`. No separator left (None): cut_between_tokens.",
        "Never strip the fragments and keep them in order: they must tile [a, b), white space included.",
    ),
    "Exercise 4.1 (merge)": (
        "Grow a chunk one piece at a time and count the whole candidate span, tokens(text, pieces[i][0], "
        "pieces[j][1]), not a sum of piece counts; a chunk always takes its first piece.",
        "Close the chunk as strip_span(text, pieces[i][0], pieces[j - 1][1]), skip it when empty, and go on "
        "from j (or from tail_start(...) when overlap is set and pieces are left).",
        "split_recursive is split_without_merge with two changes: a span that fits comes back as "
        "[strip_span(text, a, b)], and the fragments go through merge(text, fragments, size, overlap).",
    ),
    "Exercise 4.1 (tail)": (
        "Walk back from j, k = j - 1, j - 2, ..., while pieces[k:j] holds at most `overlap` tokens (tokens, "
        "not characters).",
        "Two more stops: k must stay above i (the tail is never the whole chunk), and the tail plus the next "
        "piece, tokens(text, pieces[k][0], pieces[j][1]), must fit in `size`.",
    ),
    "Exercise 4.2": (
        "Which boundaries are strongest in an ordinance? Put them first in your list, and keep the prose "
        "separators at the end for what is left.",
        "A line break followed by a heading is a boundary; a lookahead keeps the heading in the next chunk: "
        "r'\\n(?=CAPÍTULO )'.",
        "r'\\n(?=CAPÍTULO )', then r'\\n(?=(?:Artículo \\d+|Disposición)\\b)', then *SEPARATORS['prose'].",
    ),
    "Exercise 4.3": (
        "This is the merge step of section 3 with sentences as the pieces: extend the current group or start "
        "a new one.",
        "Loop over split_sentences(text, language); extend the last span to the sentence's end if "
        "count_tokens(text[last_start:sentence_end]) <= max_tokens, otherwise start a new span.",
    ),
    "Exercise 4.4": (
        "The message says which rule breaks. Compare the port's chunks with the source: where does each "
        "chunk's text really start, what is on the last line of a chunk before a heading, and what does the "
        "loop do once a window has reached the end of the text?",
        "Three fixes: record the offset after trim() (start plus the whitespace strip() removed); cut a "
        "heading separator right after its newline so '## ' starts the next chunk; stop the loop when a "
        "window reaches the end of the text (and never let the next start fall back).",
        "Search a separator only inside the window, text.rfind(sep, start, end), so no chunk passes "
        "chunk_size; then end = split_at + 1 for '\\n#...' separators, else split_at + len(sep).",
    ),
    "Exercise 4.5": (
        "Walk through the counts once, keeping a running total for the chunk being built.",
        "If adding the next count would pass `size`, close the chunk (count it) and start a new one with that "
        "piece. Do not forget the last chunk, and an empty list gives 0.",
    ),
    # notebooks/05_overlap_cost_arithmetic.ipynb
    "Exercise 5.1": (
        "Walk as the chunker does: the first window starts at 0, each window ends N tokens after its start or at "
        "T, whichever comes first, and stop as soon as a window ends at T.",
        "After a window (start, end) that does not reach T, the next one starts M tokens before end; no "
        "tokens (T = 0) means no window at all.",
        "if T <= 0: return []; windows, start = [], 0; loop: end = min(start + N, T); append (start, end); "
        "if end == T: return windows; start = end - M.",
    ),
    "Exercise 5.1 (count)": (
        "Read the derivation above: window k covers [k(N - M), k(N - M) + N), and the count stops at the first "
        "window that reaches T. Handle T = 0 and T <= N first.",
        "Rounding down drops the last, shorter window, and T / (N - M) counts M tokens too many: the formula "
        "is ceil((T - M) / (N - M)) for T > N.",
        "if T <= 0: return 0; if T <= N: return 1; return math.ceil((T - M) / (N - M)) "
        "(or, in integers, (T - M + N - M - 1) // (N - M)).",
    ),
    "Exercise 5.1 (cost)": (
        "The chunk count comes from your chunk_count; the vectors' bytes follow from the count, the dimension "
        "and the size of one float32.",
        "A float32 takes 4 bytes (not 8, that is float64); every window after the first starts M tokens before "
        "the previous one ended, so it repeats M tokens.",
        "n = chunk_count(T, N, M); tokens = T + max(n - 1, 0) * M; return n, tokens, n * dim * 4.",
    ),
    "Exercise 5.2": (
        "The vector limit sets a smallest size: windows_needed(10_444, N, M) <= 100.",
        "Each chunk of N tokens uses N of the 1,000 budget tokens: with N = 500 only 2 chunks fit.",
        "Overlap spends budget on repeated text; try a few sizes between 120 and 300 without overlap.",
    ),
    "Exercise 5.3": (
        "Section 1's formula gives the count for any M, and the count only grows with M: you want the largest M "
        "whose count still fits.",
        "Try every M from 0 to N - 1 with chunk_count(T, N, M); if even M = 0 needs more than max_vectors "
        "vectors, return None.",
        "fitting = [M for M in range(N) if chunk_count(T, N, M) <= max_vectors]; "
        "return max(fitting) if fitting else None.",
    ),
    "Exercise 5.4": (
        "Sort the spans by where they start and walk through them once, keeping the furthest end seen so far.",
        "A span starts a new place when it begins at or after that furthest end (spans that only touch are "
        "separate); otherwise it joins the current place and may push its end further.",
        "count, reach = 0, None; for start, end in sorted(spans): if reach is None or start >= reach: count += 1 "
        "and reach = end; else reach = max(reach, end). Return count.",
    ),
    # notebooks/06_late_chunking_xr12.ipynb
    "Exercise 6.1": (
        "Read the table of section 1: [CLS] and [SEP] have the empty range (0, 0), every other token a range "
        "[a, b) with a < b. A token belongs to the chunk when its characters and [start, end) share at least one "
        "character; the second sentence of the table, (58, 107), should give (17, 28).",
        "Two ranges [a, b) and [start, end) share a character exactly when a < end and b > start (ends excluded); "
        "skip the tokens whose range is empty. Return the first such token and one past the last, or None.",
        "hits = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]; "
        "return (hits[0], hits[-1] + 1) if hits else None.",
    ),
    "Exercise 6.1 (pooling)": (
        "Go chunk by chunk: your token_span(offsets, start, end) gives the rows of token_vectors that belong to "
        "the chunk, and already leaves out [CLS] (the first row) and [SEP] (the last row).",
        "Average those rows with the slice token_vectors[first:stop] (stop excluded) and .mean(axis=0); then divide "
        "the mean by its length, np.linalg.norm(mean). Normalize after averaging, not each token before.",
        "for start, end in spans: first, stop = token_span(offsets, start, end); mean = "
        "token_vectors[first:stop].mean(axis=0); keep mean / np.linalg.norm(mean). Return np.array of the rows.",
    ),
    "Exercise 6.2": (
        "Compare your plan with the ones printed in section 3 (the picture's 1,200 tokens, the handbook's first "
        "windows): the first window keeps from 0; every later one starts `overlap` tokens before the previous "
        "window's kept end and keeps up to `overlap` tokens before its own end.",
        "A document that fits is one window kept whole. Otherwise add windows while the last kept end is below "
        "n_tokens; the window that would pass the end is shifted back so that it ends at n_tokens and is full.",
        "Loop while the last kept end is below n_tokens: keep_start = previous keep_end, start = keep_start - "
        "overlap; if start + capacity reaches n_tokens, the last window is (n_tokens - capacity, n_tokens, "
        "keep_start, n_tokens).",
    ),
    "Exercise 6.2 (choice)": (
        "A kept token has at least `overlap` tokens of context on each side, so the context requirement sets a "
        "smallest overlap. Now read the printed lines: how many times the handbook does that overlap read?",
        "More overlap only reads more. If the smallest overlap that gives enough context already reads too "
        "much, no overlap meets both requirements.",
        "An overlap of 100 already reads 1.60 times the handbook, over 1.5: return None, and say which "
        "requirement you would relax (64 tokens of context read 1.44 times).",
    ),
    "Exercise 6.3": (
        "Work on whole arrays, row by row: the same weight for every row, and each result row must have length 1.",
        "Mix first, normalize afterwards: normalizing each input and then mixing leaves rows shorter than 1.",
        "mixed = weight * late + (1 - weight) * naive; return mixed / np.linalg.norm(mixed, axis=1, keepdims=True).",
    ),
    # notebooks/07_structure_aware_chunking.ipynb
    "Exercise 7.1": (
        "Walk the text line by line and keep two things as you go: the offset where the current section "
        "started, and the path of headings above it. A heading line closes the section before it.",
        "Keep a running offset (add len(line) + 1 for each line of text.split('\\n')); a heading of level n "
        "keeps only the headings of the path whose level is below n, then adds itself. A line starting with "
        "``` flips an 'inside a code block' flag, and no line inside the block is a heading.",
        "On a heading: if offset > start, append (start, offset, path); then path = [h for h in path if "
        "len(h.split()[0]) < level] + [line.strip()] and start = offset. After the loop append (start, "
        "len(text), path), and keep only the sections whose text[a:b].strip() is not empty.",
    ),
    "Exercise 7.4": (
        "Chunk each section's text on its own, then move the offsets back into the whole text.",
        "for a, b, path in markdown_sections(text): chunk text[a:b] with fixed_size_chunks, then build "
        "Chunk(c.text, a + c.start, a + c.end, c.n_tokens, {'headings': path}).",
    ),
    "Exercise 7.2": (
        "Walk upwards from the line of the definition, one line at a time, while the lines are comments.",
        "Step back with str.rfind('\\n', 0, position); while the line above, stripped, starts with '#', move "
        "the answer to that line's first non-blank character. A blank line ends the block.",
    ),
    "Exercise 7.3": (
        "Work line by line and look one line back: an underline turns the line above into a heading, unless "
        "that line is blank or already a heading.",
        "When a line matches r' {0,3}(=+|-+)[ \\t]*' and the previous line is not blank and not a '#' heading, "
        "replace the previous line with '# ' or '## ' + its text and drop the underline.",
    ),
    "Exercise 7.5": (
        "Walk through definition_spans(source, ast.parse(source).body, starts) in order, remembering where the "
        "last definition ended: the text in between is module code. Strip each piece, and skip empty ones.",
        "For a class, definition_spans(source, node.body, starts, f'{name}.') gives its methods. Split it only "
        "when it has methods and count_tokens(source[a:b]) > size: the header runs from a to the first method, "
        "then each method, with the class code between and after them.",
        "A helper emit(a, b, **metadata) that strips source[a:b] and appends Chunk(text, start, end, "
        "count_tokens(text, tokenizer), metadata) keeps the loop short; after the loop, emit the module code "
        "from the last definition's end to len(source).",
    ),
    # notebooks/08_measuring_chunkers.ipynb
    "Exercise 8.1": (
        "Work on the per-question differences a - b: one resample is one row of question indices drawn with "
        "replacement, and both strategies are scored on the same row (index the differences, not a and b apart).",
        "draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n)); diff[draws] has one row per "
        "resample, and .mean(axis=1) gives one difference of means per resample.",
        "The interval is read from those means, not from a standard error: np.percentile(means, [2.5, 97.5]). "
        "Return (diff.mean(), low, high).",
    ),
    "Exercise 8.2": (
        "Find the leader by its mean over the questions, not by its place in the dict; then compare every other "
        "strategy with it, in the order other - leader.",
        "paired_interval(per_question[s], per_question[leader]).high < 0 rules s out; an interval that "
        "contains 0 (or only reaches it) leaves s in play.",
        "The leader wins only when all len(per_question) - 1 others are ruled out; otherwise return None. "
        "Return (winner, sorted(ruled_out)).",
    ),
    "Exercise 8.3": (
        "Three steps, in order: drop what does not fit the budget, run the verdict on recall over the rest, then "
        "break the tie among the configurations still in play.",
        "A configuration fits when 5 * results[f'{c}_naive']['chunks']['mean_tokens'] <= 1000; "
        "verdict(per_question, costs=dict.fromkeys(per_question, 0)).in_play lists the ones still in play.",
        "Among those in play, return the one with the highest results[f'{c}_naive']['overall']['iou']['mean'].",
    ),
    "Exercise 8.4": (
        "Try a small size, a large one and a few in between, and read what fails: small chunks split an "
        "answer of one or two sentences; large chunks leave room for a single chunk within the budget.",
        "Aim for chunks of about half the budget, so two fit, each large enough to hold most answers whole; "
        "overlap helps small chunks keep an answer in one piece.",
        "Sizes of 48 to 64 tokens reach 26 here, with or without overlap.",
    ),
    "Exercise 8.5": (
        "Count the characters the two ranges share, then the characters in either.",
        "shared = max(0, min(ends) - max(starts)); the union is the two lengths minus what they share.",
    ),
    # notebooks/09_semantic_chunking.ipynb
    "Exercise 9.1": (
        "Look at the curves of section 1: at which buffer does each peak sit on a true change?",
        "A percentile cuts at the largest few distances of this text; with 12 gaps, percentile 85 cuts about 2.",
        'The cluster method sees the blocks of the matrix in section 4: try method="cluster" with small pieces.',
    ),
    "Exercise 9.3": (
        "Keep a running count of what is left of the budget; each chunk gives all its tokens, or what is left if "
        "that is less.",
        "Stop as soon as nothing is left: a chunk that would give 0 tokens is not returned. An empty ranking "
        "returns an empty list.",
        "taken, left = [], budget; for each n: if left == 0, stop; append min(n, left) and subtract it from left.",
    ),
    "Exercise 9.2": (
        "Go budget by budget: at each one, list the strategies whose span recall is at least 95% and whose "
        "interval against the best (gaps[view, s]) has its upper end at 0 or above.",
        "A larger budget costs tokens per question, not vectors: compare the passing choices across all three "
        "budgets, not within one.",
        "Among everything that passes at any budget, take the fewest sweep[s]['chunks']['total']; report "
        "gaps[view, s].low and .high times 100.",
    ),
    # notebooks/10_context_for_chunks.ipynb
    "Exercise 10.1": (
        "Collect the parts in order, the title first and then each heading; tidy each one, leave out the ones "
        "that should not appear, and join what is left at the end.",
        "Strip each part, and skip it when it is empty or equal to the last part you kept; `title` may be None, "
        "so start from `title or \"\"`.",
        "parts = []; for p in [title or \"\", *headings]: p = p.strip(); if p and (not parts or p != parts[-1]): "
        "parts.append(p); then return \" > \".join(parts).",
    ),
    "Exercise 10.2": (
        "Give every id a running score that starts at 0, and add 1 / (k + rank) for each list that holds it; "
        "ranks count from 1, not 0.",
        "A dict remembers the order in which ids were first added, and Python's sort is stable: sort the dict's "
        "keys by score, highest first, and tied ids keep their first-seen order.",
        "for ranking in rankings: for rank, item in enumerate(ranking, start=1): scores[item] = "
        "scores.get(item, 0.0) + 1 / (k + rank); then return sorted(scores, key=lambda item: -scores[item]).",
    ),
    "Exercise 10.3": (
        "Take each option in turn and name the printed line that would look different if it were true: what is "
        "indexed, how long the longest section is, how the ranks of the lost answers compare.",
        "Parent-child embeds sentences (one vector per sentence) and returns their sections, so no section's vector "
        "exists to be diluted; the longest section is under the budget, and the first span is always returned.",
        "The Marrow Valley answers are ranked second by both methods, yet only naive's reader receives them: four "
        "pairs of about 33 tokens fit in 150, one section of about 82 does.",
    ),
    "Exercise 10.4": (
        "Only the intervals decide: 'above zero' is a lower end above 0, 'clearly worse' an upper end below 0. "
        "Section 6 prints collection MRR and Chroma span recall; get the other two with "
        "interval('collection', method, 'span_recall') and interval('chroma', method, 'mrr').",
        "Go method by method through four intervals each (two corpora x two metrics). A method that ranks better "
        "can still hand the reader less: read every method's span recall on the collection, not only its MRR.",
        "rule_out holds every method with an upper end below zero in any of its four intervals (three methods); "
        "ship needs, on each corpus, a lower end above zero and no upper end below zero (one method).",
    ),
    # notebooks/12_documents_with_pages.ipynb
    "Exercise 12.1": (
        "Split the folded quote into words; between two words, the text may hold any run of white space, and "
        "a form feed is white space too.",
        "Build a regular expression from the words: r'\\s+'.join(re.escape(w) for w in words); re.search gives "
        "the first match, and its .start() and .end() are offsets into the text.",
        "Fold first (normalize_quote(quote)), so a quote typed with the ligature 'ﬁ' matches 'fi'; return None "
        "when the search finds nothing (and when the quote has no words).",
    ),
    "Exercise 12.2": (
        "Count, over the pages, which line opens each one: a Counter of first lines. A page with no "
        "non-blank line opens with nothing, and nothing is never a header.",
        "The first non-blank line: next((line.strip() for line in page.split('\\n') if line.strip()), ''). "
        "Keep every line whose count is at least share * len(pages).",
    ),
    # notebooks/13_your_documents.ipynb
    "Exercise 13.1": (
        "The closest passage is in section 8 of the manual; copy words from it exactly.",
        "A shorter quote is fine as long as every word of it is in the document, in order.",
    ),
    "Exercise 13.2": (
        "Each StrategyResult of `grid` has `causes`, one per question in the order of `grid.questions` (None when "
        "the answer was returned whole); the HTML report shows the same per question. CAUSES says what to try.",
        "For a wrong document the course's fixes are prefixes: `headers:` (the chunk embedded with its document's "
        "name and headings) or `hybrid:` (BM25 fused with the dense ranking). Try each on recursive:128 with "
        "evaluate(DOCS, QUESTIONS, [spec], k=1, embedder=embedder, cache=WORK / 'cache').",
        "One prefix is one change; `hybrid:headers:` would be two. Look up q19's cause in the new run too.",
    ),
    "Exercise 13.3": (
        "report.verdict has in_play, ruled_out, leader, winner and differences; report.results rows have "
        "returned_tokens, index_bytes and per_question['recall_at_k'].",
        "Choose among the strategies in play other than the leader (keep the leader only when it is the winner, "
        "or the only one in play), by a cost you can name.",
        "paired_interval(yours, leaders) takes the two per-question lists in that order and returns "
        "(mean, low, high); for the leader itself the interval is (0.0, 0.0).",
    ),
    # notebooks/14_from_notebook_to_production.ipynb
    "Exercise 14.1": (
        "`store.search` takes a query vector: encode the question as section 1 does.",
        "Filter before the search, with `where=`, so that k chunks of the city report come back.",
        "Return `[h.citation for h in hits]` in the order `search` gives them.",
    ),
    "Exercise 14.2": (
        "Hours = characters / (characters a second per worker x workers) / 3600.",
        "With two workers the job reached the '2 workers' rate of section 5's table, not twice the '1 worker' "
        "rate: rate('chunk+embed+store', 2) / 2 is what one worker delivers when workers share the job.",
        "Count workers up from 1 until embedding_hours(10_000_000, 5_000, that rate, workers) is at most 24.",
    ),
    # notebooks/11_reranking_and_late_interaction.ipynb
    "Exercise 11.1": (
        "Drop the first and the last row of each matrix before anything else: they are [CLS] and [SEP].",
        "Normalize every row to length 1, then one matrix product gives all the cosines (query rows x chunk rows).",
        "Take the maximum along the chunk's axis (one best cosine per query token) and sum those.",
    ),
    "Exercise 11.2": (
        "First keep only the methods that qualify: the lower end of the interval above zero, and the index "
        "within the budget.",
        "Among those, the one with the largest gain; if nothing is left, the answer is 'naive'.",
        "At a budget below the token index's ratio only single-vector methods (here hybrid) can qualify.",
    ),
}

# What a check compares with, by exercise: values the learner finds in the notebook's own outputs.
EXPECTED: dict[str, dict[str, object]] = {
    # notebooks/06_late_chunking_xr12.ipynb: the overlap that gives the handbook's 3,186 tokens in windows of
    # 510 at least 100 tokens of context and reads at most 1.5 times them (at 100 it reads 1.60: none)
    "Exercise 6.2": {"overlap": None},
    # notebooks/09_semantic_chunking.ipynb: the (strategy, budget) with the fewest vectors whose span recall
    # reaches 95% and whose paired interval against the best at that budget reaches 0 (results/size_sweep;
    # tests/test_exercise_expected_09.py recomputes it)
    "Exercise 9.2": {"strategy": "recursive:256", "budget": 2000},
    # notebooks/10_context_for_chunks.ipynb (results/context_collection.json and context_chroma.json;
    # tests/test_exercise_expected_10.py recomputes both). 10.3: the option the collection's outputs do not rule
    # out. 10.4: the methods whose paired interval against naive lies above zero on each corpus for MRR or span
    # recall and below zero for neither (ship), and those with an interval below zero anywhere (rule_out).
    "Exercise 10.3": {"mechanism": "b"},
    "Exercise 10.4": {"ship": ("hybrid+headers",), "rule_out": ("bm25", "late", "parent-child")},
    # notebooks/13_your_documents.ipynb: q19's cause under recursive:128 at k=1 (grid.results[...].causes)
    "Exercise 13.2": {"cause": "wrong_document"},
    # notebooks/14_from_notebook_to_production.ipynb: the smallest number of workers that embed 10 million
    # documents of 5,000 characters in 24 hours at results/batch_throughput.json's 2-worker rate shared out
    # (18,714 / 2 characters a second a worker: 61.8, rounded up)
    "Exercise 14.2": {"workers": 62},
}
