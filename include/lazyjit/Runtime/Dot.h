// Pictures of a schedule in Graphviz's dot language: each kernel a cluster holding its fused ops,
// buffers as nodes between them (lazyjit-dump --emit=dot, GRAPH=1).
#pragma once

#include "lazyjit/Schedule/Schedule.h"

#include <string>
#include <vector>

namespace lazyjit {

/// The schedule as a dot digraph: a box per buffer (dtype and shape), a cluster per kernel with
/// its AST (LOADs reading the buffer nodes, the STORE writing its output), an ellipse per load op
/// (EMPTY, COPY, CUSTOM, CONST). `outputs` names buffers (name, buffer) shown as the graph's results.
std::string scheduleToDot(const std::vector<ScheduleItem> &schedule,
                          const std::vector<std::pair<std::string, LazyBufferRef>> &outputs = {});

/// Runs Graphviz's `dot` to turn `dotText` into `path` (format from its extension: svg, png, pdf).
/// Throws an Error saying plainly when `dot` is not installed or fails.
void renderDot(const std::string &dotText, const std::string &path);

} // namespace lazyjit
