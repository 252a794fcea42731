/* SPDX-License-Identifier: LGPL-2.1-or-later */
// A C++ allocation reached through std::function, for the profiler's
// folded stacks: every frame name must be whole, including the ones with
// " (" and " at " inside ("std::function<void ()>::operator()() const").
#include <cstdlib>
#include <functional>

static void *kept;

int main()
{
    std::function<void()> f = [] { kept = std::malloc(4242); }; // SITE:lambda
    f();
    return kept ? 0 : 1;
}
