// Endgame explorer: an SVG board (PDN numbering, dark squares), position set-up by clicking
// squares or pasting a FEN, and the values from GET /probe: the position's value and every
// legal move's value and distance, best first. Clicking a move plays it. The count field
// (#elapsed, plies already played under the count in force) gives each value under the count
// (result_under_count); a move that wins in theory but not under the count is marked.
// Frisian positions carry the king-move counter (the FEN's last field, lidraughts' form
// ":H0:F1:+<black n><square>+<white n><square>"): it comes with the server's FENs of the
// moves, is kept while its kings stay where they are, and #runs shows it where it binds.
//
// Stable hooks for tests: #board, [data-square="N"] (with data-piece w/W/b/B or ""), #fen,
// #side, #variant, #elapsed, #value (data-result, data-dtw, data-under-count), #moves li
// (data-move, data-result, data-dtw, data-under-count, data-fen, class too-slow),
// #runs (data-white, data-black = "square:n" or "", data-barred = the side to move's king
// that may not make a quiet move, or ""), #status (data-status), and body[data-state] = idle | loading | ready | error with
// body[data-fen] = the FEN the shown values belong to.
"use strict";

(function () {
  const VARIANTS = {
    international: { size: 10, firstMover: "W", start: "W:W31-50:B1-20" },
    english: { size: 8, firstMover: "B", start: "B:W21-32:B1-12" },
    // Russian and Brazilian squares are named a1-h8 (a1 dark, white at the bottom)
    russian: { size: 8, firstMover: "W", start: "W:W21-32:B1-12", names: true },
    brazilian: { size: 8, firstMover: "W", start: "W:W21-32:B1-12", names: true },
    // Frisian: International's board and start; the king-move counter is part of the FEN
    frisian: { size: 10, firstMover: "W", start: "W:W31-50:B1-20", kingLimit: 3 },
  };
  const CYCLE = ["", "w", "W", "b", "B"];
  const CELL = 60;
  const SVG_NS = "http://www.w3.org/2000/svg";

  const el = (id) => document.getElementById(id);
  const board = el("board");
  const fenInput = el("fen");
  const sideSelect = el("side");
  const variantSelect = el("variant");
  const valueBox = el("value");
  const statusBox = el("status");
  const moveList = el("moves");
  const backButton = el("back");
  const elapsedInput = el("elapsed");
  const runsBox = el("runs");

  // runs: the king-move counter, { W: [square, n], B: [square, n] } (n 0: none)
  const NO_RUNS = { W: [0, 0], B: [0, 0] };
  const state = { variant: "international", side: "W", pieces: {}, runs: NO_RUNS, history: [] };
  let requestSeq = 0;
  let probeTimer = null;

  // --- geometry --------------------------------------------------------------------------
  function geometry() {
    const size = VARIANTS[state.variant].size;
    return { size, perRow: size / 2, squares: (size * size) / 2 };
  }

  function coords(square) {
    const { perRow } = geometry();
    const row = Math.floor((square - 1) / perRow);
    const k = (square - 1) % perRow;
    return { row, col: 2 * k + (row % 2 === 0 ? 1 : 0) };
  }

  function squareName(square) {
    const { size } = geometry();
    const { row, col } = coords(square);
    return `${"abcdefghijklmnop"[col]}${size - row}`;
  }

  function squareLabel(square) {
    return VARIANTS[state.variant].names ? squareName(square) : String(square);
  }

  function squareOfName(name) {
    // "c3" -> the square number; 0 when it is not a dark square of the board
    const { size, perRow } = geometry();
    const col = "abcdefghijklmnop".indexOf(name[0].toLowerCase());
    const row = size - Number(name.slice(1));
    if (col < 0 || col >= size || row < 0 || row >= size || (row + col) % 2 === 0) return 0;
    return row * perRow + Math.floor(col / 2) + 1;
  }

  function promotionRow(square, colour) {
    const { perRow, squares } = geometry();
    return colour === "w" ? square <= perRow : square > squares - perRow;
  }

  function allowed(square, piece) {
    if (piece === "w") return !promotionRow(square, "w");
    if (piece === "b") return !promotionRow(square, "b");
    return true;
  }

  // --- FEN -------------------------------------------------------------------------------
  function squareList(list) {
    // Compress runs: 31,32,33 -> 31-33.
    const out = [];
    let i = 0;
    while (i < list.length) {
      let j = i;
      while (j + 1 < list.length && list[j + 1] === list[j] + 1) j++;
      out.push(j - i >= 2 ? `${list[i]}-${list[j]}` : list.slice(i, j + 1).join(","));
      i = j + 1;
    }
    return out.join(",");
  }

  function colourField(men, kings) {
    const parts = [];
    if (men.length) parts.push(squareList(men));
    for (const k of kings) parts.push(`K${k}`);
    return parts.join(",");
  }

  function toFen() {
    const groups = { w: [], W: [], b: [], B: [] };
    Object.keys(state.pieces)
      .map(Number)
      .sort((a, b) => a - b)
      .forEach((sq) => groups[state.pieces[sq]].push(sq));
    const fen = `${state.side}:W${colourField(groups.w, groups.W)}:B${colourField(groups.b, groups.B)}`;
    const { W, B } = state.runs;
    if (!W[1] && !B[1]) return fen;
    const run = ([sq, n]) => (n ? `${n}${sq}` : "0");
    return `${fen}:H0:F1:+${run(B)}+${run(W)}`;
  }

  function parseRuns(field) {
    // "+<black n><square>+<white n><square>", e.g. "+0+328": white's king on 28, 3 moves
    const m = /^\+(\d)(\d*)\+(\d)(\d*)$/.exec(field);
    if (!m) throw new Error(`bad king-move field ${field}`);
    const one = (n, sq) => {
      if (Number(n) === 0) return [0, 0];
      if (!sq) throw new Error(`a king-move count needs its king's square: ${field}`);
      return [Number(sq), Number(n)];
    };
    return { B: one(m[1], m[2]), W: one(m[3], m[4]) };
  }

  function keptRuns(runs, pieces) {
    // A run stays only while its king is on its square.
    const out = {};
    for (const colour of ["W", "B"]) {
      const [sq, n] = runs[colour];
      out[colour] = n && pieces[sq] === colour ? [sq, n] : [0, 0];
    }
    return out;
  }

  function parseFen(text) {
    const { squares } = geometry();
    let fen = text.trim();
    if (fen.endsWith(".")) fen = fen.slice(0, -1);
    const parts = fen.split(":");
    const side = (parts[0] || "").trim().toUpperCase();
    if (side !== "W" && side !== "B") throw new Error("a FEN starts with W or B (side to move)");
    const pieces = {};
    let runs = NO_RUNS;
    for (const raw of parts.slice(1)) {
      const part = raw.trim();
      if (!part) continue;
      if (/^[HF]\d+$/.test(part)) continue; // lidraughts' half-move clock and move number
      if (part[0] === "+") {
        if (!VARIANTS[state.variant].kingLimit) throw new Error(`${state.variant} has no king-move counter`);
        runs = parseRuns(part);
        continue;
      }
      const colour = part[0].toUpperCase();
      if (colour !== "W" && colour !== "B") throw new Error(`unknown colour field ${part}`);
      for (let token of part.slice(1).split(",")) {
        token = token.trim();
        if (!token) continue;
        const king = token[0].toUpperCase() === "K";
        const body = king ? token.slice(1) : token;
        let lo;
        let hi;
        if (/^[a-pA-P]\d{1,2}$/.test(body)) {
          lo = hi = squareOfName(body);
          if (!lo) throw new Error(`not a dark square of the board: ${token}`);
        } else {
          const m = /^(\d+)(?:-(\d+))?$/.exec(body);
          if (!m) throw new Error(`bad square token ${token}`);
          lo = Number(m[1]);
          hi = m[2] ? Number(m[2]) : lo;
        }
        if (lo < 1 || hi > squares || hi < lo) throw new Error(`square out of range in ${token}`);
        for (let sq = lo; sq <= hi; sq++) {
          if (pieces[sq]) throw new Error(`square ${sq} given twice`);
          const piece = colour === "W" ? (king ? "W" : "w") : king ? "B" : "b";
          if (!allowed(sq, piece)) throw new Error(`a man on square ${sq}, its promotion row`);
          pieces[sq] = piece;
        }
      }
    }
    for (const colour of ["W", "B"]) {
      const [sq, n] = runs[colour];
      if (n && pieces[sq] !== colour) throw new Error(`king-move count on ${sq}: no ${colour === "W" ? "white" : "black"} king there`);
      if (n > VARIANTS[state.variant].kingLimit) throw new Error(`king-move count ${n} is over the limit`);
    }
    return { side, pieces, runs };
  }

  // --- drawing ---------------------------------------------------------------------------
  function svg(tag, attrs, parent) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }

  function drawBoard() {
    const { size, squares } = geometry();
    board.replaceChildren();
    board.setAttribute("viewBox", `0 0 ${size * CELL} ${size * CELL}`);
    board.dataset.variant = state.variant;
    for (let row = 0; row < size; row++) {
      for (let col = 0; col < size; col++) {
        if ((row + col) % 2 === 0) {
          svg("rect", { x: col * CELL, y: row * CELL, width: CELL, height: CELL,
            class: "light" }, board);
        }
      }
    }
    for (let sq = 1; sq <= squares; sq++) {
      const { row, col } = coords(sq);
      const g = svg("g", { "data-square": sq, class: "square", role: "gridcell",
        transform: `translate(${col * CELL},${row * CELL})` }, board);
      svg("rect", { width: CELL, height: CELL, class: "dark" }, g);
      const label = svg("text", { x: 4, y: 13, class: "number" }, g);
      label.textContent = squareLabel(sq);
      g.addEventListener("click", () => cycleSquare(sq, 1));
      g.addEventListener("contextmenu", (event) => {
        event.preventDefault();
        cycleSquare(sq, -1);
      });
    }
    drawPieces();
  }

  function drawPieces() {
    for (const g of board.querySelectorAll("[data-square]")) {
      const piece = state.pieces[g.dataset.square] || "";
      g.dataset.piece = piece;
      g.querySelector(".piece")?.remove();
      if (!piece) continue;
      const colour = piece.toLowerCase() === "w" ? "white" : "black";
      const p = svg("g", { class: `piece ${colour}${piece === piece.toUpperCase() ? " king" : ""}` }, g);
      svg("circle", { cx: CELL / 2, cy: CELL / 2, r: CELL * 0.38 }, p);
      svg("circle", { cx: CELL / 2, cy: CELL / 2, r: CELL * 0.27, class: "rim" }, p);
      if (piece === "W" || piece === "B") {
        const c = CELL / 2;
        const pts = [[-12, 7], [-12, -6], [-6, 1], [0, -10], [6, 1], [12, -6], [12, 7]];
        svg("polygon", { class: "crown",
          points: pts.map(([x, y]) => `${c + x},${c + y}`).join(" ") }, p);
      }
    }
  }

  function highlight(move) {
    for (const g of board.querySelectorAll("[data-square]")) g.classList.remove("from", "to", "taken");
    if (!move) return;
    board.querySelector(`[data-square="${move.from}"]`)?.classList.add("from");
    board.querySelector(`[data-square="${move.to}"]`)?.classList.add("to");
    for (const c of move.captures) board.querySelector(`[data-square="${c}"]`)?.classList.add("taken");
  }

  // --- state changes ---------------------------------------------------------------------
  function remember() {
    state.history.push({ side: state.side, pieces: { ...state.pieces }, runs: state.runs });
    if (state.history.length > 200) state.history.shift();
    backButton.disabled = false;
  }

  function cycleSquare(sq, step) {
    remember();
    let i = CYCLE.indexOf(state.pieces[sq] || "");
    do {
      i = (i + step + CYCLE.length) % CYCLE.length;
    } while (!allowed(sq, CYCLE[i]));
    if (CYCLE[i]) state.pieces[sq] = CYCLE[i];
    else delete state.pieces[sq];
    state.runs = keptRuns(state.runs, state.pieces);
    changed();
  }

  function setPosition(fen, keepHistory) {
    try {
      const parsed = parseFen(fen);
      if (!keepHistory) remember();
      state.side = parsed.side;
      state.pieces = parsed.pieces;
      state.runs = parsed.runs;
      changed();
      return true;
    } catch (error) {
      showStatus("error", `FEN: ${error.message}`);
      document.body.dataset.state = "error";
      return false;
    }
  }

  function changed() {
    sideSelect.value = state.side;
    variantSelect.value = state.variant;
    const fen = toFen();
    fenInput.value = fen;
    drawPieces();
    highlight(null);
    const hash = `#variant=${state.variant}&fen=${encodeURIComponent(fen)}`;
    if (location.hash !== hash) history.replaceState(null, "", hash);
    clearTimeout(probeTimer);
    probeTimer = setTimeout(probe, 120);
  }

  // --- probing ---------------------------------------------------------------------------
  function showStatus(kind, text) {
    statusBox.dataset.status = kind;
    statusBox.textContent = text;
  }

  function sideName(side) {
    return side === "white" || side === "W" ? "White" : "Black";
  }

  function describe(result, dtw) {
    if (result === "win") return `win in ${dtw} ${dtw === 1 ? "ply" : "plies"}`;
    if (result === "loss") return dtw === 0 ? "lost (no move)" : `loss in ${dtw} plies`;
    if (result === "draw") return "draw";
    return "unknown";
  }

  async function probe() {
    const fen = toFen();
    const seq = ++requestSeq;
    if (Object.keys(state.pieces).length === 0) {
      renderValue(null, "Set up a position.");
      renderRuns(null);
      renderMoves([]);
      showStatus("ok", "");
      document.body.dataset.fen = fen;
      document.body.dataset.state = "ready";
      return;
    }
    document.body.dataset.state = "loading";
    const elapsed = Math.max(0, parseInt(elapsedInput.value, 10) || 0);
    const url =
      `/probe?variant=${encodeURIComponent(state.variant)}&fen=${encodeURIComponent(fen)}` +
      `&elapsed=${elapsed}`;
    let data;
    let ok = false;
    try {
      const response = await fetch(url);
      data = await response.json();
      ok = response.ok;
    } catch (error) {
      data = { error: `the service did not answer (${error.message})` };
    }
    if (seq !== requestSeq) return; // a newer position was set meanwhile
    if (ok) {
      let text = `${sideName(data.side)} to move: ${describe(data.result, data.dtw)}`;
      if (data.count && data.result_under_count && data.result_under_count !== data.result) {
        const c = data.count;
        const where = c.limit === null ? "a later ending's count" :
          `${c.elapsed} of ${c.limit} plies on the ${c.rule} count`;
        text += ` (${where}: ${data.result_under_count} under the count)`;
      }
      renderValue(data, text);
      showStatus("ok", "");
    } else {
      if (data.king_runs !== undefined) renderRuns(data.king_runs);
      renderValue(null, data.moves ? `${sideName(state.side)} to move: value unknown` : "");
      showStatus("error", data.error || "error");
    }
    if (ok) renderRuns(data.king_runs);
    renderMoves(data.moves || []);
    document.body.dataset.fen = fen;
    document.body.dataset.state = ok ? "ready" : "error";
  }

  function renderValue(data, text) {
    valueBox.textContent = text;
    valueBox.dataset.result = data && data.result ? data.result : "";
    valueBox.dataset.dtw = data && data.dtw !== null && data.dtw !== undefined ? data.dtw : "";
    valueBox.dataset.underCount = data && data.result_under_count ? data.result_under_count : "";
  }

  function renderRuns(runs) {
    // The king-move counter where the variant has one: each side's run, the barred king.
    const run = (r) => (r ? `${r.square}:${r.moves}` : "");
    runsBox.dataset.white = runs ? run(runs.white) : "";
    runsBox.dataset.black = runs ? run(runs.black) : "";
    runsBox.dataset.barred = runs && runs.barred ? runs.barred : "";
    if (!runs) {
      runsBox.textContent = "";
      runsBox.hidden = true;
      return;
    }
    runsBox.hidden = false;
    const words = (name, r) =>
      r ? `${name}'s king on ${squareLabel(r.square)}: ${r.moves} of ${runs.limit} quiet moves in a row`
        : `${name}: no king run`;
    let text = `${words("White", runs.white)}; ${words("Black", runs.black)}.`;
    if (runs.barred) {
      text += ` The king on ${squareLabel(runs.barred)} may not make a quiet move now.`;
    }
    runsBox.textContent = text;
  }

  function renderMoves(moves) {
    moveList.replaceChildren();
    for (const m of moves) {
      const li = document.createElement("li");
      li.dataset.move = m.move;
      li.dataset.result = m.result || "";
      li.dataset.dtw = m.dtw === null ? "" : m.dtw;
      li.dataset.fen = m.fen;
      li.dataset.underCount = m.result_under_count || "";
      li.className = `result-${m.result || "unknown"}`;
      const slow = m.result === "win" && m.result_under_count && m.result_under_count !== "win";
      li.tabIndex = 0;
      const text = document.createElement("span");
      text.className = "move";
      text.textContent = m.move;
      const value = document.createElement("span");
      value.className = "val";
      value.textContent = describe(m.result, m.dtw);
      li.append(text, value);
      if (slow) {
        li.classList.add("too-slow");
        const mark = document.createElement("span");
        mark.className = "mark";
        mark.title = "wins in theory, but not before the count runs out";
        mark.textContent = `${m.result_under_count} under the count`;
        li.append(mark);
      }
      li.addEventListener("click", () => setPosition(m.fen, false));
      li.addEventListener("keydown", (event) => {
        if (event.key === "Enter") setPosition(m.fen, false);
      });
      li.addEventListener("mouseenter", () => highlight(m));
      li.addEventListener("mouseleave", () => highlight(null));
      moveList.appendChild(li);
    }
    if (!moves.length && Object.keys(state.pieces).length) {
      const li = document.createElement("li");
      li.className = "none";
      li.textContent = "no legal move";
      moveList.appendChild(li);
    }
  }

  // --- controls --------------------------------------------------------------------------
  el("setup").addEventListener("submit", (event) => {
    event.preventDefault();
    setPosition(fenInput.value, false);
  });
  sideSelect.addEventListener("change", () => {
    remember();
    state.side = sideSelect.value;
    changed();
  });
  variantSelect.addEventListener("change", () => {
    state.variant = variantSelect.value;
    state.side = VARIANTS[state.variant].firstMover;
    state.pieces = {};
    state.runs = NO_RUNS;
    state.history = [];
    backButton.disabled = true;
    drawBoard();
    changed();
  });
  elapsedInput.addEventListener("change", () => {
    clearTimeout(probeTimer);
    probeTimer = setTimeout(probe, 120);
  });
  el("clear").addEventListener("click", () => {
    remember();
    state.pieces = {};
    state.runs = NO_RUNS;
    changed();
  });
  el("start").addEventListener("click", () => setPosition(VARIANTS[state.variant].start, false));
  backButton.addEventListener("click", () => {
    const last = state.history.pop();
    backButton.disabled = state.history.length === 0;
    if (!last) return;
    state.side = last.side;
    state.pieces = last.pieces;
    state.runs = last.runs;
    changed();
  });

  // --- start: #variant=...&fen=... in the address, else an example ending -----------------
  const params = new URLSearchParams(location.hash.slice(1));
  if (VARIANTS[params.get("variant")]) state.variant = params.get("variant");
  drawBoard();
  if (!setPosition(params.get("fen") || (state.variant === "english" ? "B:WK28:B1,K10" : "W:WK38:B4,18"), true)) {
    changed();
  }
})();
