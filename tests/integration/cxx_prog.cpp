// A small C++ program for the g++ test: containers, strings, shared_ptr, exceptions and threads,
// all of which go through operator new/delete and so through malloc/free.
#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>
#include <cstdio>

struct Node {
  std::string name;
  std::vector<std::shared_ptr<Node>> kids;
};

static unsigned long work(int seed, int n) {
  std::unordered_map<std::string, std::vector<int>> m;
  std::map<int, std::string> ordered;
  for (int i = 0; i < n; i++) {
    std::string k = "key" + std::to_string((i * 7919 + seed) % (n / 2 + 1));
    m[k].push_back(i);
    ordered[i % 997] += char('a' + i % 26);
  }
  auto root = std::make_shared<Node>();
  for (int i = 0; i < 200; i++) {
    auto kid = std::make_shared<Node>();
    kid->name = std::string(i % 64, 'z');
    root->kids.push_back(kid);
  }
  unsigned long h = m.size();
  for (auto &kv : ordered) h = h * 31 + kv.second.size();
  for (auto &k : root->kids) h += k->name.size();
  try {
    std::vector<int> v(10);
    (void)v.at(20);
  } catch (const std::out_of_range &) {
    h += 1;
  }
  return h;
}

int main() {
  std::vector<unsigned long> results(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; t++) ts.emplace_back([&results, t] { results[t] = work(t, 50000); });
  for (auto &t : ts) t.join();
  std::ostringstream out;
  for (auto r : results) out << r << ' ';
  std::printf("%s\nsum %lu\n", out.str().c_str(), std::accumulate(results.begin(), results.end(), 0UL));
  return 0;
}
