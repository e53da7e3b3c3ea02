// A scheduler file that reads the configuration instead of taking options from its caller.
#include "lazyjit/Support/Config.h"
// config() in a comment is not a violation
int fusionLevel() { return lazyjit::config().opt; }
