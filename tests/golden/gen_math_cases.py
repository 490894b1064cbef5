#!/usr/bin/env python3
"""Golden cases for the olmOCR-bench `math` test type (docs/checks.md §3.5, §5, §10 cases 15-18).

The cases are written here by hand (deterministically: every random choice comes from
random.Random(SEED)); their expected verdicts come from running the reference implementation
(allenai/olmocr @ f7cfe4c, KaTeX 0.16.21 in headless Chromium via Playwright) on them, each run
with a fresh, empty equation cache.

Sub-commands
------------
  generate  > cases.jsonl
      Write the input cases ({"case", "test", "text", ...} one a line). Standard library only.

  build [--out tests/golden/math_cases.jsonl] [--sample N] [--workers W]
      generate, run `judge` twice (two fresh caches, under the reference's Python), merge,
      mark cases whose result differs between the runs as nondeterministic, check the
      expectations written here (docs/checks.md §10 cases 15-18, §5.1, §5.6) and write the golden file.

  judge TREE IN OUT [--workers W]   (internal; run under the reference's Python)
      Point HOME at a new empty directory (so the reference's SQLite cache starts cold), load
      each record with the reference's load_single_test, run it, and find the stage at which
      the reference decided, using the reference's own functions:
        exact   an extracted equation equals the `math` string (the shortcut in MathTest.run);
        mathml  norm(inner(ref MathML)) is contained in norm(inner(hyp MathML)) for some
                hypothesis (compare_rendered_equations with the glyph check disabled);
        layout  passed only through the glyph-layout comparison;
        fail    the test failed;  error  MathTest.run raised.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter, OrderedDict

SEED = 20260612
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


class Cases:
    def __init__(self):
        self.items = []
        self.counts = Counter()

    def add(self, group, math, text, *, extra=None, record=None, note=None, spec=None, expect=None):
        """One case. math: the record's `math` value; extra: more record fields; record: a whole
        record (load-time cases) used instead.  expect: True/False/"load_error", checked after
        the reference run."""
        self.counts[group] += 1
        cid = "%s-%04d" % (group, self.counts[group])
        if record is None:
            rec = OrderedDict([("pdf", "golden/math.pdf"), ("page", 1), ("id", cid), ("type", "math"), ("math", math)])
            rec.update(extra or {})
        else:
            rec = OrderedDict(record)
            if rec.get("id", "") == "@":
                rec["id"] = cid
        case = OrderedDict([("case", cid), ("test", rec), ("text", text)])
        if note:
            case["note"] = note
        if spec:
            case["spec"] = spec
        if expect is not None:
            case["expect"] = expect
        self.items.append(case)
        return cid


# ---------------------------------------------------------------------------------------------
# Equation families: (reference, [rewrites we expect to be equivalent], [near misses]).
# The reference decides; these lists only say what each case is meant to probe.
# ---------------------------------------------------------------------------------------------
FAMILIES = [
    # sub/superscript order, braces, spacing
    (r"x_i^2", [r"x^2_i", r"x_{i}^{2}", r"{x}_{i}^{2}", r"x _ i ^ 2"], [r"x_2^i", r"x^i_2", r"x_i^3", r"y_i^2"]),
    (r"a_{n+1}^{k}", [r"a^{k}_{n+1}", r"a_{n + 1}^k", r"{a}^{k}_{{n+1}}"], [r"a_{n-1}^{k}", r"a_{n+1}^{j}", r"a^{n+1}_{k}"]),
    (
        r"e^{i\pi}+1=0",
        [r"e^{i \pi} + 1 = 0", r"e^{i\pi}+1 = 0", r"{e}^{{i}{\pi}}+1=0"],
        [r"e^{i\pi}-1=0", r"e^{-i\pi}+1=0", r"e^{i\pi}+1=1"],
    ),
    (r"x^{2}", [r"x^2", r"{x}^{2}", r"x^{ 2 }"], [r"x_{2}", r"x^{3}", r"X^{2}"]),
    (r"x^2", [r"x^{2}", r"x ^2"], [r"x_2", r"x2", r"2^x"]),
    (r"12^2", [r"12^{2}", r"{12}^2", r"1 2^2"], [r"12^3", r"21^2", r"122", r"12_2"]),
    (r"1{,}000.5", [r"1{,}000.5", r"1{,}000{.}5", r"1 {,} 000.5"], [r"1,000.5", r"1000.5", r"1{,}000.6", r"1.000{,}5"]),
    (r"3.14159", [r"3.14159", r"3 .14159"], [r"3.1416", r"3,14159"]),
    # fractions
    (
        r"\frac{a}{b}",
        [r"{a \over b}", r"a \over b", r"\dfrac{a}{b}", r"\frac a b", r"\frac{ a }{ b }", r"\tfrac{a}{b}"],
        [r"\frac{b}{a}", r"a/b", r"\frac{a}{c}", r"\binom{a}{b}"],
    ),
    (r"\frac{1}{2}", [r"\frac12", r"{1 \over 2}", r"\dfrac{1}{2}"], [r"\frac{2}{1}", r"1/2", r"\frac{1}{3}", r"\tfrac{1}{4}"]),
    (
        r"\frac{x+1}{x-1}",
        [r"{x+1 \over x-1}", r"\frac{x + 1}{x - 1}", r"\dfrac{x+1}{x-1}"],
        [r"\frac{x-1}{x+1}", r"\frac{x+1}{x+1}", r"(x+1)/(x-1)"],
    ),
    (
        r"\frac{\partial f}{\partial x}",
        [r"{\partial f \over \partial x}", r"\frac{\partial f}{\partial x}", r"\dfrac{\partial f}{\partial x}"],
        [r"\frac{\partial x}{\partial f}", r"\frac{d f}{d x}", r"\frac{\partial f}{\partial y}"],
    ),
    (r"\frac{a+b}{c}", [r"{{a+b} \over c}", r"\frac{{a+b}}{c}"], [r"a+\frac{b}{c}", r"\frac{c}{a+b}"]),
    # \left/\right, delimiters
    (
        r"\left( x+y \right)^2",
        [r"(x+y)^2", r"\left(x + y\right)^{2}", r"\bigl(x+y\bigr)^2", r"\Big(x+y\Big)^2"],
        [r"\left[ x+y \right]^2", r"(x-y)^2", r"(x+y)^3", r"\left\{ x+y \right\}^2"],
    ),
    (
        r"\left[ \frac{a}{b} \right]",
        [r"[\frac{a}{b}]", r"\left[\frac ab\right]", r"\Bigl[ \frac{a}{b} \Bigr]"],
        [r"\left\{ \frac{a}{b} \right\}", r"\left( \frac{a}{b} \right)", r"\left[ \frac{b}{a} \right]"],
    ),
    (r"\left| x \right|", [r"|x|", r"\lvert x \rvert", r"\vert x \vert", r"\left|x\right|"], [r"\|x\|", r"\left| y \right|", r"(x)"]),
    (r"\langle u, v \rangle", [r"\left\langle u,v \right\rangle", r"\langle u,v\rangle"], [r"\langle v, u \rangle", r"(u, v)", r"<u, v>"]),
    # \limits, big operators
    (
        r"\int_a^b f(x)\,dx",
        [r"\int\limits_a^b f(x)\,dx", r"\int_{a}^{b} f(x) \, dx", r"\int_a^b f(x) dx", r"\int_a^b{f(x)\,dx}"],
        [r"\int_b^a f(x)\,dx", r"\int_a^b g(x)\,dx", r"\oint_a^b f(x)\,dx", r"\int_a^b f(y)\,dy"],
    ),
    (
        r"\sum_{i=1}^{n} x_i",
        [r"\sum\limits_{i=1}^{n} x_i", r"\sum_{i=1}^n x_i", r"\sum^{n}_{i=1} x_{i}", r"\displaystyle\sum_{i=1}^{n} x_i"],
        [r"\sum_{i=0}^{n} x_i", r"\prod_{i=1}^{n} x_i", r"\sum_{i=1}^{n} x_j", r"\sum_{j=1}^{n} x_j"],
    ),
    (
        r"\lim_{x \to 0} \frac{\sin x}{x} = 1",
        [r"\lim\limits_{x\to 0}\frac{\sin x}{x}=1", r"\lim_{x \rightarrow 0} \frac{\sin x}{x} = 1", r"\lim_{x\to0}{\sin x \over x}=1"],
        [r"\lim_{x \to 1} \frac{\sin x}{x} = 1", r"\lim_{x \to 0} \frac{\cos x}{x} = 1", r"\lim_{x \to 0} \frac{x}{\sin x} = 1"],
    ),
    (
        r"\prod_{k=1}^{\infty} (1 - q^k)",
        [r"\prod\limits_{k=1}^{\infty}(1-q^k)", r"\prod_{k=1}^\infty \left(1-q^{k}\right)"],
        [r"\prod_{k=0}^{\infty} (1 - q^k)", r"\prod_{k=1}^{\infty} (1 + q^k)", r"\sum_{k=1}^{\infty} (1 - q^k)"],
    ),
    (r"\max_{x \in X} f(x)", [r"\max\limits_{x \in X} f(x)", r"\max_{x\in X}f(x)"], [r"\min_{x \in X} f(x)", r"\max_{x \in Y} f(x)"]),
    # arrows, symbols
    (
        r"f: X \to Y",
        [r"f : X \rightarrow Y", r"f\colon X\to Y", r"f:X\to Y"],
        [r"f: X \leftarrow Y", r"f: X \mapsto Y", r"f: Y \to X", r"f: X \Rightarrow Y"],
    ),
    (r"a \leq b", [r"a \le b", r"a\leq b", r"a ≤ b"], [r"a < b", r"a \geq b", r"a \leqslant b", r"b \leq a"]),
    (r"x \neq y", [r"x \ne y", r"x ≠ y", r"x \not= y"], [r"x = y", r"x \equiv y", r"y \neq x"]),
    (r"\phi(x)", [r"\phi (x)", r"{\phi}(x)"], [r"\varphi(x)", r"\Phi(x)", r"\psi(x)"]),
    (r"\epsilon > 0", [r"\epsilon>0", r"ϵ > 0"], [r"\varepsilon > 0", r"\epsilon < 0", r"\eta > 0"]),
    (r"\theta + \vartheta", [r"\theta+\vartheta"], [r"\vartheta + \theta", r"\theta + \theta", r"\Theta + \vartheta"]),
    (
        r"\alpha + \beta = \gamma",
        [r"α + β = γ", r"\alpha+\beta=\gamma"],
        [r"\alpha + \beta = \delta", r"a + b = c", r"\alpha - \beta = \gamma"],
    ),
    (r"a \times b", [r"a × b", r"a\times b"], [r"a \cdot b", r"a * b", r"a \otimes b"]),
    (r"x - y", [r"x − y", r"x-y"], [r"x + y", r"x - z", r"y - x"]),
    (
        r"A \cap B = \emptyset",
        [r"A\cap B=\emptyset", r"A ∩ B = ∅"],
        [r"A \cup B = \emptyset", r"A \cap B = \varnothing", r"B \cap A = \emptyset"],
    ),
    (r"\infty", [r"∞", r"{\infty}"], [r"0", r"\propto"]),
    (
        r"\nabla \cdot \mathbf{E} = \frac{\rho}{\varepsilon_0}",
        [r"\nabla\cdot\mathbf E=\frac{\rho}{\varepsilon_0}", r"\nabla \cdot \mathbf{E} = {\rho \over \varepsilon_0}"],
        [
            r"\nabla \times \mathbf{E} = \frac{\rho}{\varepsilon_0}",
            r"\nabla \cdot \mathbf{B} = \frac{\rho}{\varepsilon_0}",
            r"\nabla \cdot E = \frac{\rho}{\varepsilon_0}",
            r"\nabla \cdot \mathbf{E} = \frac{\rho}{\epsilon_0}",
        ],
    ),
    # accents
    (r"\hat{x}", [r"\hat x", r"\hat{ x }"], [r"\widehat{x}", r"\tilde{x}", r"\bar{x}", r"\hat{y}"]),
    (r"\widehat{xy}", [r"\widehat{x y}"], [r"\hat{xy}", r"\widetilde{xy}", r"\widehat{yx}"]),
    (r"\bar{z} = x - iy", [r"\overline{z} = x - iy", r"\bar z=x-iy"], [r"\bar{z} = x + iy", r"z = x - iy", r"\tilde{z} = x - iy"]),
    (
        r"\vec{v} \cdot \vec{w}",
        [r"\vec v\cdot\vec w", r"\vec{v}\cdot\vec{w}"],
        [r"\vec{v} \times \vec{w}", r"\vec{w} \cdot \vec{v}", r"\mathbf{v} \cdot \mathbf{w}"],
    ),
    (r"\dot{x} = -kx", [r"\dot x=-kx", r"\dot{x}=-k x"], [r"\ddot{x} = -kx", r"x = -kx", r"\dot{x} = kx"]),
    # indices
    (r"x_{i,j}", [r"x_{i, j}", r"{x}_{i,j}", r"x_{i ,j}"], [r"x_{j,i}", r"x_{i;j}", r"x_{ij}", r"x^{i,j}"]),
    (r"A_{ij} = A_{ji}", [r"A_{ij}=A_{ji}", r"A_{i j} = A_{j i}"], [r"A_{ij} = A_{ij}", r"A_{ji} = A_{ij}", r"A_{ij} = -A_{ji}"]),
    (
        r"T^{\mu\nu}_{\ \ \ \rho}",
        [r"T^{\mu\nu}{}_{\rho}", r"T^{\mu \nu}_{\ \ \ \rho}"],
        [r"T^{\nu\mu}_{\ \ \ \rho}", r"T_{\mu\nu}^{\ \ \ \rho}"],
    ),
    # functions / operatorname / text
    (
        r"\sin^2\theta + \cos^2\theta = 1",
        [
            r"\sin^{2}\theta+\cos^{2}\theta=1",
            r"\sin^2 \theta + \cos^2 \theta = 1",
            r"\operatorname{sin}^2\theta+\operatorname{cos}^2\theta=1",
        ],
        [
            r"\sin^2\theta - \cos^2\theta = 1",
            r"\sin\theta^2 + \cos\theta^2 = 1",
            r"sin^2\theta + cos^2\theta = 1",
            r"\sin^2\theta + \cos^2\theta = 0",
        ],
    ),
    (r"\sin(\theta)", [r"\sin (\theta)", r"\sin\left(\theta\right)"], [r"\sin\theta", r"\cos(\theta)", r"sin(\theta)"]),
    (
        r"\operatorname{Tr}(A)",
        [r"\mathrm{Tr}(A)", r"\operatorname{Tr} (A)", r"\operatorname{T r}(A)"],
        [r"Tr(A)", r"\operatorname{tr}(A)", r"\operatorname{Tr}(B)"],
    ),
    (
        r"\operatorname{argmax}_x f",
        [r"\operatorname*{argmax}_x f", r"\mathop{\rm argmax}_x f", r"\text{argmax}_x f"],
        [r"\operatorname{argmin}_x f", r"\operatorname{argmax}_y f"],
    ),
    (r"\log_2 n", [r"\log_{2} n", r"\log_2{n}", r"\operatorname{log}_2 n"], [r"\ln n", r"\log_3 n", r"\log^2 n", r"\lg n"]),
    (
        r"x = 1 \text{ if } y > 0",
        [r"x=1\text{ if }y>0", r"x = 1 \mbox{ if } y > 0", r"x = 1 \textrm{ if } y > 0", r"x = 1 \quad\text{if}\quad y > 0"],
        [r"x = 1 \text{ if } y < 0", r"x = 1 \text{ when } y > 0", r"x = 1 if y > 0", r"x = 1 \text{ if } y \geq 0"],
    ),
    (
        r"\text{Re}(z) > 0",
        [r"\mathrm{Re}(z)>0", r"\textrm{Re}(z) > 0", r"\operatorname{Re}(z)>0"],
        [r"\Re(z) > 0", r"\text{Im}(z) > 0", r"Re(z) > 0"],
    ),
    (r"\mathbb{R}^n", [r"\Bbb{R}^n", r"\mathbb R^n", r"ℝ^n"], [r"\mathbf{R}^n", r"\mathbb{C}^n", r"\mathbb{R}^m", r"R^n"]),
    (r"\mathcal{L}(\theta)", [r"\mathcal L(\theta)", r"\mathscr{L}(\theta)"], [r"L(\theta)", r"\mathcal{L}(\phi)", r"\mathbb{L}(\theta)"]),
    (
        r"\mathbf{x}^\top \mathbf{y}",
        [r"\mathbf x^{\top}\mathbf y", r"\mathbf{x}^T \mathbf{y}", r"\boldsymbol{x}^\top\boldsymbol{y}"],
        [r"\mathbf{y}^\top \mathbf{x}", r"\mathbf{x} \mathbf{y}^\top", r"x^\top y"],
    ),
    # colour
    (
        r"E = mc^2",
        [
            r"{\color{red} E = mc^2}",
            r"\textcolor{blue}{E} = mc^2",
            r"\color{green}E=mc^2",
            r"E=m{\color{#f00}c}^2",
            r"E = m c^{2}",
            r"\colorbox{yellow}{$E = mc^2$}",
        ],
        [r"E = mc^3", r"E = m^2c", r"E \approx mc^2", r"e = mc^2", r"E = mc"],
    ),
    (r"\color{blue} a + b", [r"a+b", r"\textcolor{blue}{a+b}", r"{\color{red}a}+b"], [r"a - b", r"b + a"]),
    # environments
    (
        r"\begin{pmatrix} a & b \\ c & d \end{pmatrix}",
        [
            r"\left(\begin{matrix} a & b \\ c & d \end{matrix}\right)",
            r"\begin{pmatrix}a&b\\c&d\end{pmatrix}",
            r"\left(\begin{array}{cc} a & b \\ c & d \end{array}\right)",
        ],
        [
            r"\begin{pmatrix} a & c \\ b & d \end{pmatrix}",
            r"\begin{bmatrix} a & b \\ c & d \end{bmatrix}",
            r"\begin{pmatrix} a & b \\ c & e \end{pmatrix}",
            r"\begin{vmatrix} a & b \\ c & d \end{vmatrix}",
        ],
    ),
    (
        r"\begin{bmatrix} 1 & 0 \\ 0 & 1 \end{bmatrix}",
        [r"\left[\begin{matrix}1&0\\0&1\end{matrix}\right]", r"\begin{bmatrix}1&0\\0&1\end{bmatrix}"],
        [
            r"\begin{bmatrix} 0 & 1 \\ 1 & 0 \end{bmatrix}",
            r"\begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}",
            r"\begin{bmatrix} 1 & 0 & 0 \\ 0 & 1 & 0 \end{bmatrix}",
        ],
    ),
    (
        r"\begin{aligned} a &= b + c \\ d &= e \end{aligned}",
        [
            r"\begin{aligned}a&=b+c\\d&=e\end{aligned}",
            r"\begin{align*} a &= b + c \\ d &= e \end{align*}",
            r"\begin{array}{rl} a &= b + c \\ d &= e \end{array}",
            r"\begin{gathered} a = b + c \\ d = e \end{gathered}",
        ],
        [
            r"\begin{aligned} a &= b - c \\ d &= e \end{aligned}",
            r"\begin{aligned} d &= e \\ a &= b + c \end{aligned}",
            r"a = b + c, \quad d = e",
        ],
    ),
    (
        r"f(x) = \begin{cases} 1 & x > 0 \\ 0 & \text{otherwise} \end{cases}",
        [
            r"f(x)=\begin{cases}1&x>0\\0&\text{otherwise}\end{cases}",
            r"f(x) = \left\{ \begin{array}{ll} 1 & x > 0 \\ 0 & \text{otherwise} \end{array} \right.",
        ],
        [
            r"f(x) = \begin{cases} 0 & x > 0 \\ 1 & \text{otherwise} \end{cases}",
            r"f(x) = \begin{cases} 1 & x < 0 \\ 0 & \text{otherwise} \end{cases}",
            r"f(x) = \begin{cases} 1 & x > 0 \\ 0 & \text{else} \end{cases}",
        ],
    ),
    (
        r"\det \begin{vmatrix} a & b \\ c & d \end{vmatrix} = ad - bc",
        [r"\det\begin{vmatrix}a&b\\c&d\end{vmatrix}=ad-bc", r"\det \left|\begin{matrix} a & b \\ c & d \end{matrix}\right| = ad - bc"],
        [r"\det \begin{vmatrix} a & b \\ c & d \end{vmatrix} = ad + bc", r"\det \begin{vmatrix} a & b \\ c & d \end{vmatrix} = bc - ad"],
    ),
    # roots, misc
    (
        r"\sqrt{x^2 + y^2}",
        [r"\sqrt{x^{2}+y^{2}}", r"\sqrt {x^2+y^2}", r"\sqrt{{x^2} + {y^2}}"],
        [r"\sqrt{x^2 - y^2}", r"\sqrt[3]{x^2 + y^2}", r"(x^2 + y^2)^{1/2}", r"\sqrt{x^2} + y^2"],
    ),
    (r"\sqrt[3]{8} = 2", [r"\sqrt[3] 8=2", r"\sqrt[3]{8}=2"], [r"\sqrt{8} = 2", r"\sqrt[3]{8} = 3", r"\sqrt[2]{8} = 2"]),
    (
        r"\binom{n}{k} = \frac{n!}{k!(n-k)!}",
        [r"{n \choose k} = \frac{n!}{k!(n-k)!}", r"\binom nk=\frac{n!}{k!\,(n-k)!}", r"\dbinom{n}{k} = \dfrac{n!}{k!(n-k)!}"],
        [r"\binom{k}{n} = \frac{n!}{k!(n-k)!}", r"\binom{n}{k} = \frac{n!}{(n-k)!}", r"\binom{n}{k} = \frac{k!(n-k)!}{n!}"],
    ),
    (
        r"P(A \mid B) = \frac{P(B \mid A) P(A)}{P(B)}",
        [r"P(A|B)=\frac{P(B|A)P(A)}{P(B)}", r"P(A \vert B) = \frac{P(B \vert A)\,P(A)}{P(B)}"],
        [
            r"P(B \mid A) = \frac{P(A \mid B) P(B)}{P(A)}",
            r"P(A \mid B) = \frac{P(B \mid A)}{P(B)}",
            r"P(A \mid B) = \frac{P(B)}{P(B \mid A) P(A)}",
        ],
    ),
    (
        r"\mathbb{E}[X] = \sum_x x\,p(x)",
        [r"\mathbb E[X]=\sum_x x p(x)", r"\mathbb{E}\left[X\right] = \sum\limits_{x} x \, p(x)"],
        [r"\mathbb{E}[X] = \int x\,p(x)\,dx", r"\mathbb{E}[Y] = \sum_x x\,p(x)", r"E[X] = \sum_x x\,p(x)"],
    ),
    (r"\|x\|_2", [r"\lVert x \rVert_2", r"\left\| x \right\|_{2}", r"\Vert x\Vert_2"], [r"|x|_2", r"\|x\|_1", r"\|x\|^2"]),
    (
        r"a \equiv b \pmod{n}",
        [r"a\equiv b\pmod n", r"a \equiv b \; (\mathrm{mod}\ n)"],
        [r"a \equiv b \bmod{n}", r"a = b \pmod{n}", r"a \equiv b \pmod{m}"],
    ),
    (
        r"\forall \epsilon > 0 \, \exists \delta > 0",
        [r"\forall\epsilon>0\,\exists\delta>0", r"\forall \epsilon > 0 \; \exists \delta > 0", r"∀ \epsilon > 0 \, ∃ \delta > 0"],
        [r"\exists \epsilon > 0 \, \forall \delta > 0", r"\forall \delta > 0 \, \exists \epsilon > 0"],
    ),
    (
        r"\overbrace{1+1+\cdots+1}^{n}",
        [r"\overbrace{1 + 1 + \cdots + 1}^{n}"],
        [r"\underbrace{1+1+\cdots+1}_{n}", r"\overbrace{1+1+\dots+1}^{n}", r"1+1+\cdots+1"],
    ),
    (r"\stackrel{\text{def}}{=}", [r"\overset{\text{def}}{=}", r"\stackrel{\rm def}{=}"], [r"\underset{\text{def}}{=}", r"="]),
    (
        r"H(p) = -\sum_i p_i \log p_i",
        [r"H(p)=-\sum_{i}p_{i}\log p_{i}", r"H(p) = - \sum\limits_i p_i \log p_i"],
        [r"H(p) = \sum_i p_i \log p_i", r"H(p) = -\sum_i p_i \ln p_i", r"H(q) = -\sum_i p_i \log p_i"],
    ),
    (r"\mathrm{d}x", [r"\mathrm dx", r"{\rm d}x", r"\text{d}x"], [r"dx", r"\partial x", r"\mathrm{d}y"]),
    (r"\ce{H2O}", [], [r"H_2O"]),  # \ce is not in KaTeX core: reference error
    (r"x \tag{1}", [r"x \tag 1", r"x\tag{1}"], [r"x \tag{2}", r"x"]),
    (r"\cancel{x}", [r"\cancel x"], [r"x", r"\bcancel{x}"]),
    (
        r"\boxed{a^2+b^2=c^2}",
        [r"\boxed{a^{2}+b^{2}=c^{2}}", r"a^2+b^2=c^2", r"\fbox{$a^2+b^2=c^2$}"],
        [r"\boxed{a^2+b^2=c^3}", r"\boxed{a^2-b^2=c^2}"],
    ),
    (
        r"a^2+b^2=c^2",
        [r"a^{2}+b^{2}=c^{2}", r"\boxed{a^2+b^2=c^2}", r"a^2 + b^2 = c^2 \quad (1)"],
        [r"a^2+b^2=c^3", r"a_2+b_2=c_2", r"a^2+c^2=b^2"],
    ),
    (r"a+b", [r"a + b", r"{a}+{b}", r"a+b=c", r"(a+b)", r"x + a+b"], [r"b+a", r"a-b", r"ab", r"a+c"]),
    (r"ab", [r"a b", r"{a}{b}", r"ab+c"], [r"ba", r"a\,b", r"a \cdot b"]),
    (
        r"\newcommand{\R}{\mathbb{R}} x \in \R",
        [r"x \in \mathbb{R}", r"x\in\mathbb R", r"\def\R{\mathbb{R}} x \in \R"],
        [r"x \in \mathbb{C}", r"x \notin \mathbb{R}", r"x \in R"],
    ),
    (
        r"x \in \mathbb{R}",
        [r"\newcommand{\R}{\mathbb{R}} x \in \R", r"\def\RR{\mathbb R}x\in\RR", r"x ∈ ℝ"],
        [r"\newcommand{\R}{\mathbb{C}} x \in \R", r"x \subset \mathbb{R}"],
    ),
    (r"x²", [r"x^2", r"x^{2}"], [r"x_2", r"x^3"]),
    (r"∑_{i} a_i", [r"\sum_i a_i", r"\sum_{i} a_{i}"], [r"\prod_i a_i", r"\sum_j a_j"]),
    (r"f'(x) = 2x", [r"f^{\prime}(x)=2x", r"f^\prime(x) = 2x", r"f'(x)=2 x"], [r"f''(x) = 2x", r"f(x) = 2x", r"f'(x) = 2y"]),
    (r"\cdots", [r"\dots", r"\ldots", r"⋯"], [r"\vdots", r"\ddots", r"..."]),
    (
        r"\{x : x > 0\}",
        [r"\left\{ x : x > 0 \right\}", r"\lbrace x : x>0 \rbrace", r"\{x\colon x>0\}"],
        [r"(x : x > 0)", r"\{x : x < 0\}", r"\{x \mid x > 0\}"],
    ),
]

# Equations that distract: other formulas on the same page.
POOL = [
    r"y = mx + b",
    r"F = ma",
    r"\alpha",
    r"n \geq 1",
    r"\lambda_1",
    r"p < 0.05",
    r"k",
    r"2",
    r"\Delta t",
    r"\sigma^2",
    r"i = 1, \dots, n",
    r"\mathcal{O}(n \log n)",
    r"\omega",
    r"r^2 = x^2 + y^2",
    r"\hbar \omega",
    r"x_0",
    r"N(\mu, \sigma^2)",
    r"t \in [0, T]",
    r"\beta_1",
    r"\theta^*",
    r"V = IR",
    r"\frac{dy}{dt} = ky",
    r"G = (V, E)",
    r"\pi r^2",
    r"e^{-x}",
    r"\nabla f",
    r"\mathbf{A}",
    r"c",
    r"1",
    r"10^{-3}",
]

PROSE = [
    "The result follows from",
    "We obtain",
    "Substituting, we find",
    "Recall that",
    "where",
    "Hence",
    "It is easy to verify that",
    "The energy satisfies",
    "Consider",
    "In the limit we get",
    "Equation (3) reads",
    "By definition,",
]
TAIL = [
    "for all admissible inputs.",
    "as required.",
    "which completes the proof.",
    "",
    "(see Section 2).",
    "in this regime.",
    "with equality iff the terms vanish.",
]

WRAPS = ["inline", "display", "paren", "bracket", "display_nl", "bracket_nl", "prose", "table", "heading", "list"]


def wrap(rng, eq, how=None, dollars=True):
    """Put one equation into a piece of markdown with a given delimiter style."""
    how = how or rng.choice(WRAPS)
    if not dollars and how in ("inline", "display", "display_nl", "prose", "table", "heading", "list"):
        how = rng.choice(["paren", "bracket", "bracket_nl"])
    sp = rng.choice(["", "", " ", "  "])
    if how == "inline":
        return "$%s%s%s$" % (sp, eq, sp)
    if how == "display":
        return "$$%s%s%s$$" % (sp, eq, sp)
    if how == "paren":
        return "\\(%s%s%s\\)" % (sp, eq, sp)
    if how == "bracket":
        return "\\[%s%s%s\\]" % (sp, eq, sp)
    if how == "display_nl":
        return "$$\n%s\n$$" % eq
    if how == "bracket_nl":
        return "\\[\n%s\n\\]" % eq
    inner = rng.choice(["$%s$", "\\(%s\\)", "$$%s$$"]) % eq
    if how == "prose":
        return "%s %s %s" % (rng.choice(PROSE), inner, rng.choice(TAIL))
    if how == "table":
        return "| Quantity | Formula |\n|---|---|\n| rate | %s |\n| other | $%s$ |" % (inner, rng.choice(POOL))
    if how == "heading":
        return "## Theorem 2\n\n%s" % inner
    return "- item one\n- %s\n- item three" % inner


def page(rng, eqs, dollars=True):
    """A small markdown page holding several equations, each wrapped, with prose between."""
    parts = []
    for e in eqs:
        parts.append(wrap(rng, e, dollars=dollars))
        if rng.random() < 0.7:
            parts.append(rng.choice(PROSE) + " " + rng.choice(TAIL))
    return rng.choice(["\n\n", "\n", " "]).join(parts)


def gen_families(C, rng):
    for ref, equivs, misses in FAMILIES:
        # exact shortcut, with stripping by the extractor
        C.add("exact", ref, wrap(rng, ref, rng.choice(["inline", "display", "paren", "bracket"])))
        C.add("exact", ref, page(rng, [rng.choice(POOL), ref, rng.choice(POOL)]))
        for h in equivs:
            for how in rng.sample(WRAPS, 2):
                C.add("equiv", ref, wrap(rng, h, how))
            C.add("equiv", ref, page(rng, rng.sample(POOL, rng.randint(1, 3)) + [h]))
        for h in misses:
            C.add("miss", ref, wrap(rng, h))
            C.add("miss", ref, page(rng, [h] + rng.sample(POOL, rng.randint(1, 4))))
        # the reference equation only as dollars, with ignore_dollar_delimited
        C.add("ignore", ref, wrap(rng, ref, "inline"), extra={"ignore_dollar_delimited": True})
        C.add(
            "ignore",
            ref,
            wrap(rng, equivs[0] if equivs else ref, rng.choice(["paren", "bracket"])),
            extra={"ignore_dollar_delimited": True},
        )
        # correct equation among many on the page
        eqs = rng.sample(POOL, rng.randint(2, 6))
        eqs.insert(rng.randrange(len(eqs) + 1), rng.choice(equivs or [ref]))
        C.add("multi", ref, page(rng, eqs))
        eqs = rng.sample(POOL, rng.randint(2, 6)) + ([rng.choice(misses)] if misses else [])
        rng.shuffle(eqs)
        C.add("multi", ref, page(rng, eqs))
        # the equation written as plain text, no delimiters
        C.add("nodelim", ref, "%s %s %s" % (rng.choice(PROSE), ref, rng.choice(TAIL)))


def gen_delims(C, rng):
    """docs/checks.md §5.1 extraction: delimiter order, quirks, currency dollars."""
    S = "10.18"
    C.add("delim", "c", "$$a$$ and $b$ and \\(c\\) and \\[d\\]", spec=S, expect=True)
    for m in ["a", "b", "d", "e"]:
        C.add("delim", m, "$$a$$ and $b$ and \\(c\\) and \\[d\\]", spec=S)
    C.add("delim", "x", "$a\\(x\\)$", spec=S)
    C.add("delim", "a", "$a\\(x\\)$", spec=S)
    C.add("delim", "$", "$$$$", spec=S, expect=True)
    C.add("delim", "\\$", "$$$$", spec=S)
    C.add("delim", " a+b", "$a+b$", spec=S, expect=True, note="unstripped math: via rendering")
    C.add("delim", "a+b ", "$a+b$", note="unstripped math")
    C.add("delim", "\ta+b\n", "\\(a+b\\)", note="unstripped math")
    C.add("delim", "x $ y", "$$ x $ y $$")
    C.add("delim", "x", "$$ x $ y $$")
    C.add("delim", "x", "\\(\\)")
    C.add("delim", "\\quad", "\\(\\)", note="empty \\( \\) yields nothing")
    C.add("delim", "\\quad", "$ $", note="$ $ yields the empty equation")
    C.add("delim", "\\quad", "$$ $$")
    C.add("delim", "x", "$ $")
    C.add("delim", "x", "$$x$")
    C.add("delim", "x", "$x$$")
    C.add("delim", "x", "$x")
    C.add("delim", "x", "\\(x")
    C.add("delim", "x", "\\[x")
    C.add("delim", "x", "\\(x\\]")
    C.add("delim", "x", "\\[ \\( x \\) \\]")
    C.add("delim", "\\( x \\)", "\\[ \\( x \\) \\]")
    C.add("delim", "x y", "$x$$y$")
    C.add("delim", "xy", "$x$$y$")
    C.add("delim", "x", "\\\\(x\\\\)")
    C.add("delim", "a+b", "$a\n+b$", note="dollars span lines")
    C.add("delim", "a+b", "$$\na+b\n$$")
    C.add("delim", "a+b", "\\[\n\n a+b \n\n\\]")
    C.add("delim", "a+b", "$a+$b$")
    C.add("delim", "b", "$a+$b$")
    C.add("delim", "a+b", "`$a+b$`", note="code spans are not special")
    C.add("delim", "a+b", "```\n$a+b$\n```")
    C.add("delim", "a+b", "\\$a+b\\$", note="escaped dollars are still dollars")
    C.add("delim", "a+b", "\\$a+b$")
    C.add("delim", "a+b", "<math><mi>a</mi><mo>+</mo><mi>b</mi></math>", note="MathML in content is not extracted")
    C.add("delim", "a+b", "\\begin{equation} a+b \\end{equation}", note="environments are not delimiters")
    C.add("delim", "a+b", "$\\begin{equation} a+b \\end{equation}$")
    C.add("delim", "x^2", "$$x^2$$$$y$$")
    C.add("delim", "y", "$$x^2$$$$y$$")
    C.add("delim", "$x$", "$$$x$$$")
    C.add("delim", "x", "$$$x$$$")
    C.add("delim", "x", "$$$$x$$$$")
    C.add("delim", "\\(x\\)", "$\\(x\\)$")
    C.add("delim", "x", "\\[$x$\\]")
    C.add("delim", "$x$", "\\[$x$\\]")
    C.add("delim", "x", "\\(x\\)", extra={"ignore_dollar_delimited": True})
    C.add("delim", "x", "$x$", extra={"ignore_dollar_delimited": True})
    C.add("delim", "x", "$$x$$", extra={"ignore_dollar_delimited": True})
    C.add("delim", "x", "$x$", extra={"ignore_dollar_delimited": False})
    C.add("delim", "x", "$x$", extra={"ignore_dollar_delimited": "false"}, note="truthy string")
    C.add("delim", "x", "$x$", extra={"ignore_dollar_delimited": 0})
    C.add("delim", "x", "$x$", extra={"ignore_dollar_delimited": None})
    C.add("delim", "x", "$x$", extra={"ignore_dollar_delimited": 1})
    C.add("delim", "x", "$x$", extra={"ignore_dollar_delimited": []})
    C.add("delim", "x", "\\[x\\]", extra={"ignore_dollar_delimited": "yes"})
    # currency dollars
    C.add("currency", "5", "it costs $5 and $6 today", spec="10.17", expect=True)
    C.add("currency", "5 and", "it costs $5 and $6 today", note="exact shortcut on the currency span")
    C.add("currency", "6", "it costs $5 and $6 today")
    C.add("currency", "56", "it costs $5 and $6 today")
    C.add("currency", "5", "\\$5 and \\$6")
    C.add("currency", "5 and \\", "\\$5 and \\$6", note="exact on the escaped span")
    C.add("currency", "5", "it costs $5 and $6 today", extra={"ignore_dollar_delimited": True})
    C.add("currency", "x^2", "Price: $10, tax $2, and the area is $x^2$.")
    C.add("currency", "x^2", "Price: $10, tax $2, and $x^2$ is the area.")
    C.add("currency", "10", "Price: $10, tax $2, and the area is $x^2$.")
    C.add("currency", "2", "Price: $10, tax $2, and the area is $x^2$.")
    C.add("currency", "100", "We paid $100.")
    C.add("currency", "100", "We paid $100 and $200.")
    C.add("currency", "200", "We paid $100 and $200.")
    C.add("currency", "1{,}000", "Total: $1,000 and $2,000 in fees")
    C.add("currency", "1,000", "Total: $1,000 and $2,000 in fees")
    C.add("currency", "x", "US$5 and US$7 for $x$")
    C.add("currency", "\\frac{a}{b}", "The $3 fee and $\\frac{a}{b}$ ratio")
    C.add("currency", "\\frac{a}{b}", "The $3 fee and the $\\frac{a}{b}$ ratio cost $4")
    for _ in range(30):
        amounts = ["$%d" % rng.randint(1, 999) for _ in range(rng.randint(1, 4))]
        eq = rng.choice(POOL + [f[0] for f in FAMILIES[:20]])
        words = amounts + ["$%s$" % eq] if rng.random() < 0.6 else amounts
        rng.shuffle(words)
        text = " ".join("%s %s" % (w, rng.choice(["for lunch,", "each", "and", "or", "plus tax;", "then"])) for w in words)
        C.add("currency", rng.choice([eq, amounts[0][1:], "x"]), text)


ERR_REFS = [
    r"\frac{a}{",
    r"\undefinedcommand x",
    r"x^^2",
    r"}",
    r"\left( x",
    r"a_b_c",
    r"\sqrt[",
    r"\begin{matrix} a",
    r"x^{2",
    r"\end{aligned}",
    r"&",
    r"\label{eq1} x",
    r"\ce{H2O}",
    r"a \\\\ b \over c \over d",
    r"\href{http://x}{y}",
    r"x_",
    "\\",
    r"\frac{}{}{}{",
]
GLYPHLESS = [
    r"\quad",
    r"\,",
    r"\;",
    r"\ ",
    r"\qquad",
    r"~",
    r"\!",
    r"\hspace{1em}",
    r"{}",
    r"\phantom{x}",
    r"\vphantom{x}",
    r"\kern1em",
    r"\mathstrut",
    r"\enspace",
    r"\:",
    r"\;\;",
]


def gen_render_errors(C, rng):
    """docs/checks.md §5.6: unrenderable / glyph-less references and hypotheses."""
    C.add("reffail", r"\frac{a}{", "$x$", spec="10.15", expect=True)
    C.add("reffail", r"\frac{a}{", "$$ $$", spec="10.15", expect=True)
    C.add("reffail", r"\frac{a}{", "no math here", spec="10.15", expect=False)
    C.add("glyphless", r"\quad", "text $z$", spec="10.16", expect=True)
    C.add("glyphless", r"\quad", "no equations", spec="10.16", expect=False)
    contents = [
        "$x$",
        "$$ $$",
        "no math here",
        "",
        "\\(\\alpha\\)",
        "$\\frac{a}{$",
        "costs $5 and $6",
        "\\[ \\undefined \\]",
        "$$\\quad$$",
        "plain $ sign",
        "$%s$" % r"\frac{a}{",
    ]
    for ref in ERR_REFS:
        for t in rng.sample(contents, 4):
            C.add("reffail", ref, t)
        C.add("reffail", ref, "$%s$" % ref, note="identical hypothesis: exact shortcut")
        C.add("reffail", ref, "$$ %s $$" % ref)
    for ref in GLYPHLESS:
        for t in rng.sample(contents, 4):
            C.add("glyphless", ref, t)
        C.add("glyphless", ref, "$%s$" % ref)
        C.add("glyphless", ref, "\\[%s x\\]" % ref)
    # hypotheses that do not render
    for ref, bad in [
        (r"a+b", r"a+b}"),
        (r"\frac{a}{b}", r"\frac{a}{b"),
        (r"x^2", r"x^^2"),
        (r"x^2", r"x^{2"),
        (r"\alpha", r"\alpa"),
        (r"\quad", r"\qaud"),
        (r"\frac{a}{", r"\frac{a}{"),
        (r"\frac{a}{", r"\frac{b}{"),
        (r"\sqrt{2}", r"\sqrt{2"),
        (r"E=mc^2", r"E=mc^^2"),
        (r"f(x)", r"f(x"),
        (r"\left(x\right)", r"\left(x\right"),
        (r"\alpha", r"\alpha }"),
        (r"a", r"\undefined a"),
    ]:
        C.add("hypfail", ref, "$%s$" % bad)
        C.add("hypfail", ref, "$%s$ and $%s$" % (bad, ref.replace("\\frac{a}{", "x")))
        C.add("hypfail", ref, "\\[%s\\] then \\(%s\\)" % (bad, rng.choice(POOL)))


def gen_layout(C, rng):
    """docs/checks.md §5.6 layout-sensitive outcomes, single glyph and neighbour-free references."""
    pairs = [
        ("x^2", "$x_2$"),
        ("ab", "$ba$"),
        (r"\frac{a}{b}", "$a/b$"),
        (r"\frac{a}{b}", r"$\dfrac{a}{b}$"),
        ("a+b", "$a + b$"),
        (r"\to", r"$\rightarrow$"),
        (r"\phi", r"$\varphi$"),
        (r"\hat{x}", r"$\widehat{x}$"),
        (r"\sin(\theta)", r"$\sin\theta$"),
        ("x_{i,j}", "$x_{j,i}$"),
        (r"\left[x\right]", r"$\left\{x\right\}$"),
        (r"\int_a^b", r"$\int\limits_a^b$"),
        (r"{\color{red}x}", "$x$"),
        ("a+b", "$a+b=c$"),
        ("x", "$y + x$"),
        ("x", "$xyz$"),
        ("x", "$X$"),
        ("1", "$10$"),
        ("1", "$21$"),
        ("=", "$a=b$"),
        ("+", "$a+b$"),
        ("a", r"$\mathbf{a}$"),
        ("a", r"$\mathrm{a}$"),
        ("a", r"$\alpha$"),
        ("2", "$x^2$"),
        ("i", "$x_i$"),
        ("x^2", "$x^2_i$"),
        ("x_i", "$x_i^2$"),
        ("x^2", "$x^{2}y$"),
        ("xy", "$x y$"),
        ("xy", r"$x\,y$"),
        ("xy", r"$x\quad y$"),
        ("x y", "$xy$"),
        ("xy", "$x\\cdot y$"),
        ("a=b", "$a = b$"),
        ("a=b", "$b=a$"),
        ("a=b", r"$a \equiv b$"),
        ("ab", "$a_b$"),
        ("ab", "$a^b$"),
        (r"\alpha\beta", r"$\beta\alpha$"),
        (r"\sum", r"$\sum_{i}$"),
        (r"\sum_i", r"$\sum$"),
        (r"\int", r"$\int_0^1$"),
        (r"\frac{1}{2}", r"$\frac{1}{2}x$"),
        (r"\frac{1}{2}x", r"$\frac{1}{2}$"),
        (r"x", r"$\frac{x}{y}$"),
        (r"\frac{x}{y}", r"$\frac{x}{y+z}$"),
        (r"\frac{x}{y+z}", r"$\frac{x}{y}$"),
        (r"\sqrt{x}", r"$\sqrt{xy}$"),
        (r"\sqrt{x}", r"$\sqrt[n]{x}$"),
        (r"\bar{x}", r"$x$"),
        (r"x", r"$\bar{x}$"),
        (r"x'", r"$x^\prime$"),
        (r"x''", r"$x'$"),
        (r"-", r"$−$"),
        (r"-1", r"$−1$"),
        (r"\ldots", r"$...$"),
        ("A", "$A$ and $B$"),
        ("AB", "$A$ and $B$"),
        (r"\mathbb{R}", r"$\mathbb{R}^n$"),
        (r"R", r"$\mathbb{R}$"),
        (r"\pi", r"$π$"),
        (r"\pi", r"$\varpi$"),
        (r"\ell", r"$l$"),
        (r"\imath", r"$i$"),
        (r"0", r"$O$"),
        (r"\{a\}", r"$\{a,b\}$"),
        (r"(a)", r"$(a, b)$"),
        (r"[0,1]", r"$[0, 1)$"),
        (r"f(x)", r"$f (x)$"),
        (r"\dfrac{a}{b}", r"$\frac{a}{b}$"),
        (r"\tfrac{a}{b}", r"$\frac{a}{b}$"),
        (r"\displaystyle\sum_i x", r"$\sum_i x$"),
        (r"\textstyle\sum_i x", r"$\sum_i x$"),
        (r"\scriptstyle x", r"$x$"),
        (r"\large x", r"$x$"),
        (r"\Huge x+y", r"$x+y$"),
    ]
    for ref, text in pairs:
        C.add("layout", ref, text)
        inner = text[1:-1] if text.count("$") == 2 and text[0] == text[-1] == "$" else None
        C.add("layout", ref, "\\[%s\\]" % inner if inner is not None else text + " $q$")


def gen_unicode(C, rng):
    pairs = [
        (r"α", r"\alpha"),
        (r"\alpha", r"α"),
        (r"x ∈ A", r"x \in A"),
        (r"∫_0^1 f", r"\int_0^1 f"),
        (r"√2", r"\sqrt{2}"),
        (r"\sqrt{2}", r"√2"),
        (r"x₁", r"x_1"),
        (r"x_1", r"x₁"),
        (r"½", r"\frac{1}{2}"),
        (r"→", r"\to"),
        (r"\to", r"→"),
        (r"ℏ", r"\hbar"),
        (r"°C", r"^\circ C"),
        (r"45^\circ", r"45°"),
        (r"Ω", r"\Omega"),
        (r"µ", r"\mu"),
        (r"\mu", r"μ"),
        (r"x·y", r"x \cdot y"),
        (r"∂_t u", r"\partial_t u"),
        (r"ℕ", r"\mathbb{N}"),
        (r"a ⊆ b", r"a \subseteq b"),
        (r"x′", r"x'"),
        (r"é", r"\acute{e}"),
        (r"\text{café}", r"\text{cafe}"),
        (r"\text{日本}", r"\text{日本}"),
        (r"\text{Größe} = 5", r"\text{Grösse} = 5"),
        (r"x＋y", r"x+y"),
        (r"ｘ", r"x"),
        (r"😀", r"x"),
        (r"\text{😀}", r"\text{😀}"),
        ("a\u200bb", "ab"),
        ("a\u00a0b", "a b"),
        ("a\u2009b", "a b"),
        ("x\u2212y", "x-y"),
        ("x\ufeff", "x"),
        (r"Δx", r"\Delta x"),
        (r"𝑥", r"x"),
        (r"𝐱", r"\mathbf{x}"),
        (r"ℒ", r"\mathcal{L}"),
    ]
    for ref, hyp in pairs:
        C.add("unicode", ref, "$%s$" % hyp)
        C.add("unicode", ref, "Das Ergebnis ist \\(%s\\) für alle Werte." % hyp)
    for w in ["Größe $x$ und $y$", "数学 $\\alpha$ 公式", "ελληνικά $\\beta$", "$\\text{Привет}$ мир"]:
        C.add("unicode", r"\alpha", w)
        C.add("unicode", r"\text{Привет}", w)


def gen_noeq(C, rng):
    texts = [
        "",
        " ",
        "\n\n",
        "Just prose without any equations at all.",
        "# Heading\n\nSome text.",
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "x^2 + y^2 = z^2 written plainly",
        "\\frac{a}{b}",
        "Use the $ sign for dollars",
        "A single \\( without close",
        "\\) reversed \\(",
        "\\] reversed \\[",
        "<span>$</span>",
    ]
    for t in texts:
        for m in ["x", r"\frac{a}{b}", r"\quad", r"\frac{a}{"]:
            C.add("noeq", m, t)


def gen_load(C, rng):
    base = lambda **kw: OrderedDict([("pdf", "golden/math.pdf"), ("page", 1), ("id", "@"), ("type", "math")] + list(kw.items()))
    recs = [
        (base(), "missing math"),
        (base(math=""), "empty"),
        (base(math="   "), "blank"),
        (base(math="\n\t"), "blank"),
        (base(math=5), "int"),
        (base(math=1.5), "float"),
        (base(math=None), "null"),
        (base(math=["x"]), "list"),
        (base(math={"a": 1}), "object"),
        (base(math=True), "bool"),
        (base(math="x", foo=1), "unknown key"),
        (base(math="x", max_diffs=-1), "negative max_diffs"),
        (base(math="x", max_diffs=2), "max_diffs ok"),
        (base(math="x", max_diffs=1.0), "float max_diffs"),
        (base(math="x", checked="verified"), "checked"),
        (base(math="x", url="http://example.com"), "url"),
        (base(math="x", ignore_dollar_delimited="no"), "str flag"),
        (OrderedDict([("pdf", ""), ("page", 1), ("id", "@"), ("type", "math"), ("math", "x")]), "empty pdf"),
        (OrderedDict([("pdf", "a.pdf"), ("page", 1), ("id", ""), ("type", "math"), ("math", "x")]), "empty id"),
        (OrderedDict([("page", 1), ("id", "@"), ("type", "math"), ("math", "x")]), "missing pdf"),
        (OrderedDict([("pdf", "a.pdf"), ("id", "@"), ("type", "math"), ("math", "x")]), "missing page"),
        (OrderedDict([("pdf", "a.pdf"), ("page", 1), ("id", "@"), ("type", "Math"), ("math", "x")]), "type case"),
        (base(math=r"\frac{a}{"), "unrenderable loads"),
        (base(math=r"\quad"), "glyph-less loads"),
        (base(math="\u200b"), "zero-width is not blank"),
        (base(math="\u00a0"), "nbsp is blank"),
        (base(math="\x1c"), "\\x1c is blank"),
        (base(math="x", page="1"), "page as string"),
        (base(math="x", text="y"), "field of another type"),
    ]
    for rec, note in recs:
        C.add("load", None, "$x$ and $$y$$", record=rec, note=note)


def long_sum(rng, n, change=None):
    terms = ["c_{%d} x^{%d}" % (i, i % 7 + 1) for i in range(n)]
    if change is not None:
        terms[change] = terms[change].replace("x", "y", 1)
    return " + ".join(terms)


def gen_hostile(C, rng):
    """Large but finite inputs the reference can still run."""
    ref = long_sum(rng, 140)  # ~2 kB
    C.add("long", ref, "$$%s$$" % ref, note="exact")
    C.add("long", ref, "$$%s$$" % ref.replace(" + ", "+"), note="spacing")
    C.add("long", ref, "$$%s$$" % long_sum(rng, 140, change=70), note="one term changed")
    C.add("long", ref, "$$%s$$" % long_sum(rng, 139), note="last term missing")
    C.add("long", ref, "$$%s + z$$" % ref, note="extra term")
    short = long_sum(rng, 5)
    C.add("long", short, "$$%s$$" % ref, note="short ref inside long hypothesis")
    mat = r"\begin{pmatrix}" + r" \\ ".join(" & ".join("a_{%d%d}" % (i, j) for j in range(12)) for i in range(12)) + r"\end{pmatrix}"
    C.add("long", mat, "$$%s$$" % mat.replace(" ", ""), note="12x12 matrix")
    C.add("long", mat, "$$%s$$" % mat.replace("a_{55}", "b_{55}"), note="12x12 matrix, one entry changed")
    nested = "x" + "".join("^{x" for _ in range(12)) + "}" * 12
    C.add("long", nested, "$%s$" % nested.replace("x", "x ", 3))
    fr = "1" + "".join(r"\frac{1}{1+" for _ in range(10)) + "x" + "}" * 10
    C.add("long", fr, "$%s$" % fr)
    C.add("long", fr, "$%s$" % fr.replace("x", "y"))
    many = " ".join("$%s$" % rng.choice(POOL) for _ in range(60))
    C.add("long", r"\frac{dy}{dt} = ky", many, note="60 equations")
    C.add("long", r"\gamma_{17}", many, note="60 equations, none match")
    prose = " ".join(rng.choice(PROSE) for _ in range(800))
    C.add("long", r"E = mc^2", prose + " $E=mc^2$ " + prose, note="long page, one equation")
    C.add("long", "x", "$" * 501, note="501 dollars")
    C.add("long", "x", "\\(" * 300 + "x" + "\\)" * 300)
    C.add("long", "a", "$a$" * 400)
    C.add("long", "x" * 300, "$%s$" % ("x" * 300))
    C.add("long", "x" * 300, "$%s$" % ("x" * 299))
    C.add("long", "xy" * 100, "$%s$" % ("yx" * 100))


def gen_random_pages(C, rng):
    """Realistic pages: several equations from the families, the target rewritten or not."""
    for _ in range(220):
        ref, equivs, misses = rng.choice(FAMILIES)
        roll = rng.random()
        target = (
            [ref]
            if roll < 0.2
            else ([rng.choice(equivs)] if equivs and roll < 0.6 else ([rng.choice(misses)] if misses and roll < 0.9 else []))
        )
        others = [rng.choice(f[1] or [f[0]]) for f in rng.sample(FAMILIES, rng.randint(0, 3))]
        others += rng.sample(POOL, rng.randint(0, 3))
        eqs = others + target
        rng.shuffle(eqs)
        dollars = rng.random() < 0.85
        extra = {"ignore_dollar_delimited": True} if not dollars and rng.random() < 0.5 else None
        C.add("page", ref, page(rng, eqs, dollars=dollars), extra=extra)


def generate():
    rng = random.Random(SEED)
    C = Cases()
    gen_families(C, rng)
    gen_delims(C, rng)
    gen_render_errors(C, rng)
    gen_layout(C, rng)
    gen_unicode(C, rng)
    gen_noeq(C, rng)
    gen_load(C, rng)
    gen_hostile(C, rng)
    gen_random_pages(C, rng)
    return C.items


# ---------------------------------------------------------------------------------------------
# judge: runs under the reference's Python
# ---------------------------------------------------------------------------------------------
def judge(args):
    home = tempfile.mkdtemp(prefix="mathgold-home-")  # cold equation cache for this run
    os.environ["HOME"] = home
    os.environ["XDG_CACHE_HOME"] = os.path.join(home, ".cache")
    sys.path.insert(0, args.tool_dir)
    sys.path.insert(0, args.tree)
    import re
    from concurrent.futures import ThreadPoolExecutor
    from dataclasses import replace

    import sitecustomize  # noqa: F401  (points playwright at Debian's chromium)
    from olmocr.bench.katex import render as R
    from olmocr.bench.tests import load_single_test
    from rapidfuzz import fuzz

    assert R.equation_cache.db_path.startswith(home), R.equation_cache.db_path
    dummy = R.SpanInfo("\x00", R.BoundingBox(0.0, 0.0, 1.0, 1.0))

    def equations_of(test, content):  # the extraction in MathTest.run, verbatim
        patterns = [(r"\\\((.+?)\\\)", r"\\\((.+?)\\\)"), (r"\\\[(.+?)\\\]", r"\\\[(.+?)\\\]")]
        if not test.ignore_dollar_delimited:
            patterns.extend([(r"\$\$(.+?)\$\$", r"\$\$(.+?)\$\$"), (r"\$(.+?)\$", r"\$(.+?)\$")])
        equations, modified = [], content
        for search, repl in patterns:
            equations.extend(e.strip() for e in re.findall(search, modified, re.DOTALL))
            modified = re.sub(repl, "", modified, flags=re.DOTALL)
        return equations

    def one(line):
        case = json.loads(line)  # plain dicts, as reference_verdicts.py gives the loader
        out = OrderedDict(case=case["case"])
        try:
            test = load_single_test(dict(case["test"]))
        except Exception as e:
            out["load_error"] = "%s: %s" % (type(e).__name__, e)
            return out
        try:
            ok, why = test.run(case["text"])
        except Exception as e:
            out.update(passed=False, explanation="error: %s: %s" % (type(e).__name__, e), stage="error")
            return out
        out.update(passed=bool(ok), explanation=why)
        eqs = equations_of(test, case["text"])
        if not ok:
            stage = "fail"
        elif any(h == test.math for h in eqs):
            stage = "exact"
        else:
            ref = replace(test.reference_render, spans=[dummy])  # glyph check can never succeed
            stage = "layout"
            for h in sorted(eqs, key=lambda x: -fuzz.ratio(x, test.math)):
                hr = R.render_equation(h)
                if hr and R.compare_rendered_equations(ref, replace(hr, spans=[])):
                    stage = "mathml"
                    break
        out["stage"] = stage
        return out

    lines = [l for l in open(args.inp, encoding="utf-8") if l.strip()]
    t0 = time.time()
    with open(args.out, "w", encoding="utf-8") as f, ThreadPoolExecutor(args.workers) as ex:
        for i, r in enumerate(ex.map(one, lines)):  # in input order, written as they come
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
            f.flush()
            if (i + 1) % 100 == 0:
                print("judged %d/%d in %.0fs" % (i + 1, len(lines), time.time() - t0), file=sys.stderr, flush=True)
    print("judge: %d cases in %.0fs" % (len(lines), time.time() - t0), file=sys.stderr)
    os._exit(0)  # the reference's browser threads do not always exit by themselves


def build(args):
    cases = generate()
    if args.sample:
        step = max(1, len(cases) // args.sample)
        keep = {c["case"] for c in cases[::step]} | {c["case"] for c in cases if "expect" in c}
        cases = [c for c in cases if c["case"] in keep]
    tmp = args.work or tempfile.mkdtemp(prefix="mathgold-")
    os.makedirs(tmp, exist_ok=True)
    inp = os.path.join(tmp, "cases.jsonl")
    order = cases[:]
    random.Random(1).shuffle(order)  # judge in random order, so a partial run is a fair sample
    with open(inp, "w", encoding="utf-8") as f:
        for c in order:
            f.write(json.dumps({"case": c["case"], "test": c["test"], "text": c["text"]}, ensure_ascii=False) + "\n")
    run_paths = []
    for k in range(args.runs):
        outp = os.path.join(tmp, "run%d.jsonl" % k)
        subprocess.run(
            [
                args.ref_python,
                os.path.abspath(__file__),
                "judge",
                args.ref_tree,
                inp,
                outp,
                "--workers",
                str(args.workers),
                "--tool-dir",
                args.tool_dir,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        run_paths.append(outp)
    merge(cases, run_paths, args.out)


def merge(cases, run_paths, out):
    """Write the golden file from the judge outputs; only cases judged in every run are kept
    (so a partial first run gives a partial file)."""
    runs = [{r["case"]: r for r in map(json.loads, open(p, encoding="utf-8"))} for p in run_paths]
    cases = [c for c in cases if all(c["case"] in r for r in runs)]
    bad, counts = [], Counter()
    with open(out, "w", encoding="utf-8") as f:
        for c in cases:
            r0 = runs[0][c["case"]]
            key = lambda r: (r.get("load_error"), r.get("passed"), r.get("explanation"), r.get("stage"))
            nondet = any(key(r[c["case"]]) != key(r0) for r in runs[1:])
            line = OrderedDict(case=c["case"], test=c["test"], text=c["text"])
            if "load_error" in r0:
                line["load_error"] = r0["load_error"]
                got, stage = "load_error", "load_error"
            else:
                line["passed"], line["explanation"] = r0["passed"], r0["explanation"]
                got, stage = r0["passed"], r0["stage"]
                line["stage"] = stage
                line["mathml_match"] = stage in ("exact", "mathml")
            line["nondeterministic"] = nondet
            for k in ("spec", "note"):
                if k in c:
                    line[k] = c[k]
            if "expect" in c and c["expect"] != got:
                bad.append("%s: expected %r, reference says %r" % (c["case"], c["expect"], got))
            counts[(c["case"].rsplit("-", 1)[0], "nondet" if nondet else stage)] += 1
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    groups = sorted({g for g, _ in counts})
    stages = ["exact", "mathml", "layout", "fail", "error", "load_error", "nondet"]
    print("| group | " + " | ".join(stages) + " | total |", file=sys.stderr)
    for g in groups + ["**total**"]:
        row = [sum(v for (gg, s), v in counts.items() if s == st and (gg == g or g == "**total**")) for st in stages]
        print("| %s | %s | %d |" % (g, " | ".join(map(str, row)), sum(row)), file=sys.stderr)
    for b in bad:
        print("EXPECTATION MISMATCH " + b, file=sys.stderr)
    if bad:
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("generate")
    b = sub.add_parser("build")
    b.add_argument("--out", default=os.path.join(HERE, "math_cases.jsonl"))
    b.add_argument("--ref-tree", default="/work/ref/olmocr")
    b.add_argument("--ref-python", default="/work/ref/venv/bin/python")
    b.add_argument("--tool-dir", default="/work/shared/tools")
    b.add_argument("--workers", type=int, default=3)
    b.add_argument("--runs", type=int, default=2)
    b.add_argument("--sample", type=int, default=0, help="judge only about N cases (plus the spec cases)")
    b.add_argument("--work", default=None, help="folder for the judge outputs (default: a new temp dir)")
    m = sub.add_parser("merge", help="write the golden file from existing judge outputs")
    m.add_argument("runs", nargs="+")
    m.add_argument("--out", default=os.path.join(HERE, "math_cases.jsonl"))
    j = sub.add_parser("judge")
    j.add_argument("tree")
    j.add_argument("inp")
    j.add_argument("out")
    j.add_argument("--workers", type=int, default=3)
    j.add_argument("--tool-dir", default="/work/shared/tools")
    args = ap.parse_args()
    if args.cmd == "generate":
        for c in generate():
            sys.stdout.write(json.dumps(c, ensure_ascii=False) + "\n")
    elif args.cmd == "build":
        build(args)
    elif args.cmd == "merge":
        merge(generate(), args.runs, args.out)
    else:
        judge(args)


if __name__ == "__main__":
    main()
