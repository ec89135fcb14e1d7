// The affinity mask as a launcher leaves it (one CPU) and widened again: the widened mask
// is what the process had before it was narrowed (the test's own cpuset), and the list text
// names CPUs as taskset and /proc do.

#include <sched.h>

#include <thread>

#include <gtest/gtest.h>

#include "base/cpu_affinity.h"

namespace tilesmith {
namespace {

TEST(CpuAffinity, ListTextJoinsRuns) {
  EXPECT_EQ(cpu_list_text({}), "");
  EXPECT_EQ(cpu_list_text({3}), "3");
  EXPECT_EQ(cpu_list_text({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(cpu_list_text({0, 2, 4, 5}), "0,2,4-5");
}

TEST(CpuAffinity, ANarrowedThreadIsWidenedToWhatItWasAllowed) {
  const CpuAffinity original = current_cpu_affinity();
  ASSERT_GT(original.allowed, 0);
  ASSERT_GE(original.online, original.allowed);
  // Affinity is per thread: narrow and widen a thread of its own, as a launcher's binding
  // (inherited at exec) and autotune-loop's start would.
  CpuAffinity narrowed, widened;
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    int first = 0;
    while (first < CPU_SETSIZE) {
      cpu_set_t now;
      CPU_ZERO(&now);
      sched_getaffinity(0, sizeof now, &now);
      if (CPU_ISSET(first, &now)) break;
      ++first;
    }
    CPU_SET(first, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    narrowed = current_cpu_affinity();
    widened = widen_cpu_affinity();
  });
  t.join();
  EXPECT_EQ(narrowed.allowed, 1);
  EXPECT_EQ(widened.allowed, original.allowed) << "back to every CPU the process may use, and no more";
  EXPECT_EQ(widened.list, original.list);
}

}  // namespace
}  // namespace tilesmith
