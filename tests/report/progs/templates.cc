// templates.cc - a C++ program whose allocating frames are template
// instances with long names (std::map<std::string, std::vector<int>>'s
// nodes and vectors), for the report page's folded names (tests/report/page.sh).
#include <map>
#include <string>
#include <vector>

int main()
{
    std::map<std::string, std::vector<int>> index;
    for (int i = 0; i < 2000; i++)
        index[std::to_string(i % 500)].push_back(i);
    return index.size() == 500 ? 0 : 1;
}
