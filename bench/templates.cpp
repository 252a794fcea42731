/* SPDX-License-Identifier: LGPL-2.1-or-later */
// templates.cpp: a compiler workload for `make bench`, not a program.
// It instantiates many distinct std::map / std::vector / std::tuple types
// through variadic and recursive templates, so g++ (cc1plus) allocates a lot
// of small, long-lived and short-lived nodes. Compiled with -O1 -c only.
// COUNT sets how many instantiation families are made (tune for ~2-5 s).
#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#ifndef COUNT
#define COUNT 6
#endif

template <int N> struct Tag {
    static constexpr int value = N;
    friend bool operator<(Tag, Tag) { return false; }
    friend bool operator==(Tag, Tag) { return true; }
};

// A tuple of N distinct element types.
template <int N, typename... Ts> struct Row : Row<N - 1, Tag<N>, std::vector<Tag<N>>, Ts...> {};
template <typename... Ts> struct Row<0, Ts...> { using type = std::tuple<Ts...>; };

template <typename... Ts> struct Sum;
template <> struct Sum<> { static constexpr int value = 0; };
template <typename T, typename... Ts> struct Sum<T, Ts...> {
    static constexpr int value = sizeof(T) + Sum<Ts...>::value;
};

template <typename Tuple, std::size_t... I>
long fold_tuple(const Tuple &t, std::index_sequence<I...>)
{
    long s = 0;
    ((s += static_cast<long>(sizeof(std::get<I>(t)))), ...);
    return s;
}

template <int N> struct Family {
    using RowT = typename Row<N % 7 + 2>::type;
    using Key = std::tuple<int, std::string, Tag<N>>;
    using Value = std::variant<int, double, std::string, std::vector<Tag<N>>>;

    static long run(int seed)
    {
        std::map<Key, std::vector<Value>> table;
        std::unordered_map<std::string, std::map<int, Tag<N>>> index;
        for (int i = 0; i < seed; ++i) {
            Key k{i, std::to_string(i * N), Tag<N>{}};
            table[k].emplace_back(i);
            table[k].emplace_back(std::to_string(i));
            index[std::get<1>(k)][i] = Tag<N>{};
        }
        std::vector<std::pair<Key, std::size_t>> sizes;
        for (auto &[k, v] : table)
            sizes.emplace_back(k, v.size());
        std::sort(sizes.begin(), sizes.end(),
                  [](const auto &a, const auto &b) { return std::get<1>(a.first) < std::get<1>(b.first); });
        long total = std::accumulate(sizes.begin(), sizes.end(), 0L,
                                     [](long acc, const auto &p) { return acc + (long)p.second; });
        for (auto &[k, v] : table)
            for (auto &x : v)
                total += std::visit([](const auto &y) -> long { return (long)sizeof(y); }, x);
        RowT row{};
        total += fold_tuple(row, std::make_index_sequence<std::tuple_size_v<RowT>>{});
        return total + (long)index.size() + Sum<Tag<N>, Key, Value>::value;
    }
};

template <int... N> long run_all(std::integer_sequence<int, N...>)
{
    return (Family<N>::run(N) + ...);
}

long bench_templates(void)
{
    return run_all(std::make_integer_sequence<int, COUNT>{});
}
