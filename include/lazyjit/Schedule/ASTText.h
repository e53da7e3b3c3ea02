// The textual kernel-AST format: a readable, line-oriented, indented rendering of a KernelOp tree
// that parses back to an equal tree (docs/ir.md has the grammar). It is what `lazyjit-dump
// --emit=ast` prints and `--input=ast` reads, and the form ASTs take in logs and lit tests.
//
//   BufferOps.STORE idx=0 dtype=float32
//     view shape=(10,) strides=(1,) offset=0 mask=None contiguous=True
//     BinaryOps.ADD
//       BufferOps.LOAD idx=1 dtype=float32
//         view shape=(10,) strides=(1,) offset=0 mask=None contiguous=True
//       BufferOps.CONST val=2 dtype=float32
//         view shape=(10,) strides=(0,) offset=0 mask=None contiguous=False
#pragma once

#include "lazyjit/Schedule/KernelOp.h"

#include <string>
#include <string_view>
#include <vector>

namespace lazyjit {

/// Prints a kernel AST, one node per line, children indented by two spaces. A subtree that occurs
/// more than once is printed once with a label (`$0 = BinaryOps.MUL`) and referenced afterwards
/// (`$0`), so shared subtrees cannot blow up the output. An AST deeper than kAstTextBlockDepth
/// (a long fused chain) prints as blocks instead: its shared subtrees and the nodes at every
/// kAstTextBlockDepth - 1 levels are labeled blocks of their own in column 1 (`$3 = BinaryOps.ADD`),
/// each before the blocks that reference it, and the root's block comes last, so the text is linear
/// in the AST's size (docs/ir.md). Throws UnsupportedError for variable names that are not
/// identifiers.
std::string printAst(const KernelOp &ast);

/// The deepest AST (astDepth) that printAst prints as one indented tree, and the depth of each block
/// of a deeper one. Its text is nested at most this deep, which parseAst reads.
inline constexpr int kAstTextBlockDepth = 128;
/// parseAst rejects text nested this deep (a line's indentation counts its level; a leaf's view
/// lines count one level more). printAst never nests deeper than kAstTextBlockDepth, so this only
/// limits hand-written text.
inline constexpr int kMaxAstTextDepth = 1000;
/// The nesting depth of an AST (a leaf is 1), each distinct node visited once, without recursion.
int astDepth(const KernelOp &ast);

/// The identity of an AST as text, for compile-cache keys: printAst's lines without indentation,
/// each op line ending with its number of sources (` #2`), so the preorder still determines the
/// tree. Linear in the AST's size at any depth, and unchanged by printAst's blocks.
std::string astKey(const KernelOp &ast);

/// Parses one AST (with the blocks it defines before its root, as printAst writes a deep one).
/// `filename` only names the input in errors. Malformed input throws ParseError with the message
/// `FILE:LINE:COL: error: <message>`.
KernelOpRef parseAst(std::string_view text, const std::string &filename);

/// Parses every AST of a file (each one, and each block it defines, starts at column 1; blank lines
/// and `#` comments between and inside them are ignored). An input without any AST is an error.
std::vector<KernelOpRef> parseAsts(std::string_view text, const std::string &filename);

/// The textual form of one symbolic value: an integer, or the node's DEBUG key (`n[1-64]`,
/// `((n[1-64]*4)+-5)`), which parseSInt turns back into an equal node.
std::string printSInt(const SInt &x);
/// Parses a value printed by printSInt (the whole text must be one value).
SInt parseSInt(std::string_view text, const std::string &filename = "<sint>");

/// Prints a double so that strtod gives the same value back: `%.17g`, `inf`, `-inf`, `nan`.
std::string printDouble(double v);

} // namespace lazyjit
