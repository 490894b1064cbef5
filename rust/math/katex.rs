//! KaTeX 0.16.21 in QuickJS-NG (rquickjs), one runtime per thread.
//!
//! `katex.min.js` is not part of this repository: it is read at run time from the path given to
//! [`set_katex_path`], which the Python package calls with the file it resolved once
//! (`olmocr_rl/_katex.py`: `OLMOCR_RL_KATEX_JS`, the user cache `install-katex` fills, or an
//! installed `olmocr` package; KaTeX 0.16.21, the version the reference runs). The core reads no
//! environment for it. Loading checks `katex.version == "0.16.21"`.
//!
//! Bounds, so that model output cannot hang or exhaust a worker: every render runs under a
//! deterministic operation budget (QuickJS calls the interrupt handler about every 10,000
//! operations; [`OP_BUDGET`] calls end the render), a wall-clock backstop, a heap limit and a
//! JS stack limit far below the thread's real stack. A render that hits a bound reports
//! [`Rendered::Limit`] and the thread's runtime is rebuilt.
//!
//! Whatever thread calls in, rendering runs where the stack is known to be large enough: on the
//! calling thread when its real remaining stack (read from the OS by `stacker`) exceeds
//! [`STACK_NEEDED`], else on one helper thread with a [`HELPER_STACK`] stack that owns its own
//! runtime (a Python thread made with `threading.stack_size(1 << 20)`, or a main thread under
//! `ulimit -s 1024`, would otherwise overflow its real stack before QuickJS's 1 MiB limit).

use rquickjs::{Context, Function, Runtime};
use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The KaTeX version the reference renders with.
pub const KATEX_VERSION: &str = "0.16.21";
/// Interrupt-handler calls (each ≈ 10,000 QuickJS operations) one render may use: ~0.07 s of
/// one core. A typical equation needs less than one; a 5,000-character sum of 200 fractions
/// (the longest equation rendered at all, see MAX_EQUATION_CHARS) needs less than half. What
/// exceeds it is mostly macro bombs, which KaTeX itself would grind through for seconds. All
/// 2,709 golden math cases agree with the reference under it.
pub const OP_BUDGET: u64 = 150;
/// Wall-clock backstop per render, a last resort only: the op budget ends every render first
/// (about 3 s of one core at most), so a verdict never depends on the machine's load. It is
/// there for time spent inside one native call, which the op budget does not see.
pub const WALL_LIMIT: Duration = Duration::from_secs(120);
/// Longer equations are not rendered (a bound: KaTeX's own cost grows faster than linearly on
/// long flat input, about 2.5 s for 10,000 symbols in QuickJS). Far above real equations.
pub const MAX_EQUATION_CHARS: usize = 5_000;
/// JS heap per thread.
pub const MEMORY_LIMIT: usize = 512 << 20;
/// JS stack: well below any thread's real stack (16 MiB in the scoring pool, 8 MiB for a main
/// thread, 2 MiB for Rust's spawned threads), so deep nesting ends in a catchable RangeError.
pub const STACK_LIMIT: usize = 1 << 20;

/// Real stack a render needs on the calling thread: the JS stack limit plus room for QuickJS's
/// and our native frames.
pub const STACK_NEEDED: usize = STACK_LIMIT + (3 << 20);
/// Stack of the helper thread that renders for callers with less.
pub const HELPER_STACK: usize = 16 << 20;

/// Our JS glue, evaluated after KaTeX: `__olmocr_mathml(eq)` and `__olmocr_layout(eq)`.
const GLUE: &str = concat!(include_str!("font_widths.js"), include_str!("glue.js"));

/// What one render gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Rendered {
    /// The payload (MathML markup, or the layout record list).
    Ok(String),
    /// KaTeX threw (a parse error, or a JS stack overflow on deep nesting): the reference's
    /// render error.
    Error(String),
    /// Our bounds ended the render (op budget, time, memory).
    Limit(String),
    /// No usable KaTeX (file missing or wrong version): the message names the fix.
    Unavailable(String),
}

static KATEX_PATH: Mutex<Option<PathBuf>> = Mutex::new(None);
/// The file last read: (path, its text or why it could not be read).
type Source = (PathBuf, Result<Arc<String>, String>);
static SOURCE: Mutex<Option<Source>> = Mutex::new(None);

/// Where to read `katex.min.js` from. The core reads no environment: Python resolves the file once
/// (`olmocr_rl._katex.configure`, run when `olmocr_rl` is imported) and passes it here.
pub fn set_katex_path(path: Option<PathBuf>) {
    *KATEX_PATH.lock().unwrap_or_else(|e| e.into_inner()) = path;
}

const FIX: &str = "math checks need KaTeX 0.16.21's katex.min.js: run `olmocr-rl install-katex` \
(or set OLMOCR_RL_KATEX_JS to the file)";

fn configured_path() -> Option<PathBuf> {
    KATEX_PATH.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The KaTeX source for the configured path, read once per path.
fn source() -> Result<(PathBuf, Arc<String>), String> {
    let path = configured_path().ok_or_else(|| format!("KaTeX not found; {FIX}"))?;
    let mut slot = SOURCE.lock().unwrap_or_else(|e| e.into_inner());
    if slot.as_ref().is_none_or(|(p, _)| *p != path) {
        let read = std::fs::read_to_string(&path)
            .map(Arc::new)
            .map_err(|e| format!("cannot read {}: {e}; {FIX}", path.display()));
        *slot = Some((path.clone(), read));
    }
    let (p, r) = slot.as_ref().expect("just filled");
    r.clone().map(|s| (p.clone(), s))
}

/// Whether a usable KaTeX is configured (Err names the fix).
pub fn available() -> Result<(), String> {
    with_engine(|_| Ok(())).and_then(|r| r)
}

struct Engine {
    path: PathBuf,
    _rt: Runtime,
    ctx: Context,
    ticks: Arc<AtomicU64>,
    started: Arc<Mutex<Instant>>,
}

impl Engine {
    fn new(path: PathBuf, src: &str) -> Result<Engine, String> {
        let rt = Runtime::new().map_err(|e| format!("QuickJS runtime: {e}"))?;
        rt.set_memory_limit(MEMORY_LIMIT);
        rt.set_max_stack_size(STACK_LIMIT);
        let ticks = Arc::new(AtomicU64::new(0));
        let started = Arc::new(Mutex::new(Instant::now()));
        let (t, s) = (Arc::clone(&ticks), Arc::clone(&started));
        rt.set_interrupt_handler(Some(Box::new(move || {
            let n = t.fetch_add(1, Ordering::Relaxed) + 1;
            n > OP_BUDGET || s.lock().map(|s| s.elapsed() > WALL_LIMIT).unwrap_or(true)
        })));
        let ctx = Context::full(&rt).map_err(|e| format!("QuickJS context: {e}"))?;
        ticks.store(u64::MAX / 2, Ordering::Relaxed); // loading KaTeX is not budgeted
        let version = ctx.with(|c| -> Result<String, String> {
            ticks.store(0, Ordering::Relaxed);
            *started.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
            c.eval::<(), _>(src.as_bytes().to_vec()).map_err(|e| format!("{}: {e}", path.display()))?;
            ticks.store(0, Ordering::Relaxed);
            c.eval::<(), _>(GLUE).map_err(|e| format!("glue: {e}"))?;
            c.eval::<String, _>("typeof katex === 'object' ? String(katex.version) : 'none'").map_err(|e| e.to_string())
        })?;
        if version != KATEX_VERSION {
            return Err(format!("{} is KaTeX {version}, not {KATEX_VERSION}; {FIX}", path.display()));
        }
        Ok(Engine { path, _rt: rt, ctx, ticks, started })
    }

    /// Runs `func(eq)`; also returns the interrupt ticks it used (its cost: about 10,000
    /// QuickJS operations each, deterministic up to one tick).
    fn call(&self, func: &str, eq: &str) -> (Rendered, u64) {
        self.ticks.store(0, Ordering::Relaxed);
        *self.started.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        let rendered = self.ctx.with(|c| {
            let f: Function = match c.globals().get(func) {
                Ok(f) => f,
                Err(e) => return Rendered::Unavailable(format!("glue function {func}: {e}")),
            };
            match f.call::<_, String>((eq,)) {
                Ok(s) => match s.split_at_checked(1) {
                    Some(("M", rest)) => Rendered::Ok(rest.to_string()),
                    Some(("E", rest)) => Rendered::Error(rest.to_string()),
                    _ => Rendered::Limit("the render gave an unexpected result".to_string()),
                },
                Err(e) => {
                    let _ = c.catch(); // clear the pending exception (an engine dump, not for users)
                    Rendered::Limit(self.limit_reason(&e.to_string()))
                }
            }
        });
        (rendered, self.ticks.load(Ordering::Relaxed).min(OP_BUDGET + 1))
    }

    /// Why a render was stopped, in plain words.
    fn limit_reason(&self, error: &str) -> String {
        if self.ticks.load(Ordering::Relaxed) > OP_BUDGET {
            format!("the equation needs more than the render budget ({} million operations)", OP_BUDGET as f64 / 100.0)
        } else if error.contains("out of memory") {
            format!("the equation needs more than the render heap ({} MB)", MEMORY_LIMIT >> 20)
        } else if self.started.lock().map(|s| s.elapsed() > WALL_LIMIT).unwrap_or(false) {
            format!("the render ran past the {} s backstop", WALL_LIMIT.as_secs())
        } else {
            "the render engine stopped the equation".to_string()
        }
    }
}

thread_local! {
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
}

fn with_engine<T>(f: impl FnOnce(&Engine) -> T) -> Result<T, String> {
    let (path, src) = source()?;
    ENGINE.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|e| e.path != path) {
            *slot = None;
            *slot = Some(Engine::new(path, &src)?);
        }
        Ok(f(slot.as_ref().expect("just built")))
    })
}

/// Runs glue function `func` (`__olmocr_mathml` or `__olmocr_layout`) on `eq`.
pub fn render(func: &str, eq: &str) -> Rendered {
    render_costed(func, eq).0
}

/// [`render`], with the interrupt ticks the render used (0 when it did not run); the tests
/// read it to show what the budget allows.
fn render_costed(func: &str, eq: &str) -> (Rendered, u64) {
    if eq.chars().count() > MAX_EQUATION_CHARS {
        return (Rendered::Limit(format!("the equation is longer than {MAX_EQUATION_CHARS} characters")), 0);
    }
    // Unknown (None) only on platforms stacker cannot read; treat as too small.
    if stacker::remaining_stack().is_some_and(|left| left >= STACK_NEEDED) {
        render_here(func, eq)
    } else {
        render_on_helper(func, eq)
    }
}

type Job = (String, String, std::sync::mpsc::Sender<(Rendered, u64)>);
static HELPER: Mutex<Option<std::sync::mpsc::Sender<Job>>> = Mutex::new(None);

/// Renders on the helper thread (started on first use, kept for the process's life).
fn render_on_helper(func: &str, eq: &str) -> (Rendered, u64) {
    let (reply, answer) = std::sync::mpsc::channel();
    let job: Job = (func.to_string(), eq.to_string(), reply);
    let sent = {
        let mut slot = HELPER.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            let (tx, rx) = std::sync::mpsc::channel::<Job>();
            let spawned =
                std::thread::Builder::new().name("olmocr-rl-katex".into()).stack_size(HELPER_STACK).spawn(move || {
                    for (func, eq, reply) in rx {
                        let _ = reply.send(render_here(&func, &eq));
                    }
                });
            match spawned {
                Ok(_) => *slot = Some(tx),
                Err(e) => return (Rendered::Unavailable(format!("cannot start the KaTeX thread: {e}")), 0),
            }
        }
        slot.as_ref().expect("just set").send(job).is_ok()
    };
    match (sent, answer.recv()) {
        (true, Ok(r)) => r,
        _ => {
            *HELPER.lock().unwrap_or_else(|e| e.into_inner()) = None; // it died: start a new one next time
            (Rendered::Limit("the render thread stopped".to_string()), 0)
        }
    }
}

fn render_here(func: &str, eq: &str) -> (Rendered, u64) {
    match with_engine(|e| e.call(func, eq)) {
        Ok(r) => {
            if matches!(r.0, Rendered::Limit(_)) {
                // The runtime may be mid-way through anything: start afresh next time.
                ENGINE.with(|cell| *cell.borrow_mut() = None);
            }
            r
        }
        Err(e) => (Rendered::Unavailable(e), 0),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Whether KaTeX is configured; tests that need it skip (with a message) when it is not,
    /// except where they were asked to run: `make test` sets `OLMOCR_RL_REQUIRE_KATEX`, CI sets
    /// `CI`, and a set `OLMOCR_RL_KATEX_JS` names the file to use. There a missing or broken
    /// KaTeX fails them. Rust's own tests have no Python to resolve the file: when none is
    /// configured they take `OLMOCR_RL_KATEX_JS`.
    pub fn katex_or_skip() -> bool {
        if configured_path().is_none() {
            set_katex_path(std::env::var_os("OLMOCR_RL_KATEX_JS").filter(|v| !v.is_empty()).map(PathBuf::from));
        }
        let asked = ["OLMOCR_RL_REQUIRE_KATEX", "CI", "OLMOCR_RL_KATEX_JS"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty() && x != "0"));
        match available() {
            Ok(()) => true,
            Err(e) if !asked => {
                eprintln!("skipping: {e}");
                false
            }
            Err(e) => panic!("KaTeX is required here (OLMOCR_RL_REQUIRE_KATEX, CI or OLMOCR_RL_KATEX_JS is set): {e}"),
        }
    }

    #[test]
    fn renders_and_reports_errors() {
        if !katex_or_skip() {
            return;
        }
        assert!(matches!(render("__olmocr_mathml", "x^2"), Rendered::Ok(m) if m.contains("<msup>")));
        assert!(
            matches!(render("__olmocr_mathml", "\\frac{a}{"), Rendered::Error(m) if m.contains("KaTeX parse error"))
        );
    }

    #[test]
    fn hostile_input_is_bounded() {
        if !katex_or_skip() {
            return;
        }
        let t = Instant::now();
        for eq in [
            "\\def\\a{\\a}\\a".to_string(),
            "\\def\\a{\\a\\a}\\a".to_string(),
            "{".repeat(100_000),
            "{".repeat(3000) + &"}".repeat(3000),
            "x+".repeat(50_000) + "x",
            "\\sqrt{".repeat(5000) + &"}".repeat(5000),
            "\\left(".repeat(2000) + &"\\right)".repeat(2000),
        ] {
            let r = render("__olmocr_mathml", &eq);
            assert!(!matches!(r, Rendered::Unavailable(_)), "{r:?}");
        }
        // The engine still works afterwards.
        assert!(matches!(render("__olmocr_mathml", "y"), Rendered::Ok(_)));
        assert!(t.elapsed() < Duration::from_secs(120));
    }

    /// What the operation budget allows: the longest realistic equation renders within it (with
    /// room to spare), a macro-expansion bomb does not, and the stop is said in plain words.
    #[test]
    fn the_budget_fits_real_equations_and_stops_bombs() {
        if !katex_or_skip() {
            return;
        }
        let sum = (1..=200).map(|i| format!("\\frac{{a_{{{i}}}}}{{b_{{{i}}}}}")).collect::<Vec<_>>().join(" + ");
        assert!(sum.chars().count() <= MAX_EQUATION_CHARS);
        let (r, cost) = render_costed("__olmocr_mathml", &sum);
        assert!(matches!(r, Rendered::Ok(_)) && cost < OP_BUDGET / 2, "{cost}");
        let body = "x+".repeat(250) + "y";
        let mut bomb = format!("\\def\\za{{{body}}}");
        for (prev, name) in ["za", "zb", "zc", "zd"].iter().zip(["zb", "zc", "zd", "ze"]) {
            bomb += &format!("\\def\\{name}{{{}}}", format!("\\{prev}").repeat(4));
        }
        bomb += "\\ze";
        let (r, cost) = render_costed("__olmocr_mathml", &bomb);
        assert_eq!(
            r,
            Rendered::Limit("the equation needs more than the render budget (1.5 million operations)".into())
        );
        assert_eq!(cost, OP_BUDGET + 1);
    }
}
