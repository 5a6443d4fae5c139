#!/usr/bin/env bash
# C++: g++ itself runs under tlbpack, and the program it builds (new/delete, containers,
# exceptions, threads) prints the same under tlbpack as without it.
set -u
lib=$1
command -v g++ >/dev/null || { echo "SKIP: no g++"; exit 77; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cat > "$dir/p.cc" <<'CC'
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
struct alignas(64) Wide { char b[64]; };
int main() {
  std::map<std::string, std::vector<int>> m;
  for (int i = 0; i < 50000; i++) m["key" + std::to_string(i % 5000)].push_back(i);
  long sum = 0;
  for (auto &kv : m) for (int v : kv.second) sum += v;
  std::vector<std::thread> ts;
  std::vector<long> part(4);
  for (int t = 0; t < 4; t++) ts.emplace_back([&, t] { for (int i = 0; i < 20000; i++) { auto p = std::make_unique<std::string>(100, 'x'); part[t] += p->size(); } });
  for (auto &t : ts) t.join();
  auto w = std::make_unique<Wide[]>(10);
  bool aligned = (reinterpret_cast<uintptr_t>(w.get()) % 64) == 0;
  try { throw std::runtime_error("boom"); } catch (const std::exception &e) { std::cout << e.what() << "\n"; }
  std::cout << m.size() << " " << sum << " " << part[0] + part[1] + part[2] + part[3] << " " << aligned << "\n";
}
CC
TLBPACK_CONF=stats:1 LD_PRELOAD="$lib" g++ -O1 -pthread -o "$dir/p" "$dir/p.cc" 2>"$dir/gxx.err" \
  || { cat "$dir/gxx.err"; echo "FAIL: g++ under tlbpack"; exit 1; }
grep -q 'allocated_total' "$dir/gxx.err" || { echo "FAIL: g++ ran but tlbpack stats are missing"; exit 1; }
want=$("$dir/p") || { echo "FAIL: program without tlbpack"; exit 1; }
got=$(TLBPACK_CONF=stats:1 LD_PRELOAD="$lib" "$dir/p" 2>"$dir/p.err") || { cat "$dir/p.err"; echo "FAIL: program under tlbpack"; exit 1; }
[ "$want" = "$got" ] || { echo "FAIL: output differs: '$want' vs '$got'"; exit 1; }
grep -q 'nmalloc' "$dir/p.err" || { echo "FAIL: no stats"; exit 1; }
echo "$got"; echo "PASS"
