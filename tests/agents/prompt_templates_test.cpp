#include "agents/prompts/prompt_templates.h"

#include <gtest/gtest.h>

namespace mk::agents {
namespace {

TEST(PromptTemplates, EveryAgentHasAnEmbeddedVersionedTemplate) {
  for (const char* name :
       {"planner", "implementer", "debugger", "tester", "autotuner", "profile_analyst"}) {
    const PromptTemplate& t = prompt_template(name);
    EXPECT_GE(t.version, 1) << name;
    EXPECT_FALSE(t.system.empty()) << name;
    EXPECT_NE(t.user.find("{{kernel_source}}"), std::string::npos) << name;
  }
  EXPECT_THROW(prompt_template("poet"), PromptError);
}

TEST(PromptTemplates, RendersEveryPlaceholder) {
  const std::string out =
      render_prompt("Kernel {{kernel_name}}:\n{{kernel_source}}\n{{kernel_name}}",
                    {{"kernel_name", "k"}, {"kernel_source", "x = 1"}});
  EXPECT_EQ(out, "Kernel k:\nx = 1\nk");
}

TEST(PromptTemplates, ValuesAreNotRescannedForPlaceholders) {
  // A kernel may contain `{{` (e.g. in an f-string); it must come through literally.
  EXPECT_EQ(render_prompt("{{kernel_source}}", {{"kernel_source", "f'{{x}}'"}}), "f'{{x}}'");
}

TEST(PromptTemplates, MissingValueFailsNamingThePlaceholder) {
  try {
    render_prompt("{{kernel_source}} {{plan}}", {{"kernel_source", "x"}});
    FAIL() << "expected PromptError";
  } catch (const PromptError& e) {
    EXPECT_NE(std::string(e.what()).find("missing value for placeholder {{plan}}"),
              std::string::npos)
        << e.what();
  }
}

TEST(PromptTemplates, UnknownPlaceholderFails) {
  try {
    render_prompt("{{kernal_source}}", {{"kernal_source", "x"}});
    FAIL() << "expected PromptError";
  } catch (const PromptError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown placeholder {{kernal_source}}"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(render_prompt("text {{plan", {{"plan", "p"}}), PromptError);
}

TEST(PromptTemplates, TemplateFileFormatIsChecked) {
  const PromptTemplate t = parse_prompt_template("x", "version: 7\nsys\n=== user ===\nuser\n");
  EXPECT_EQ(t.version, 7);
  EXPECT_EQ(t.system, "sys");
  EXPECT_EQ(t.user, "user");
  EXPECT_THROW(parse_prompt_template("x", "sys\n=== user ===\nuser"), PromptError);
  EXPECT_THROW(parse_prompt_template("x", "version: 1\nno user part"), PromptError);
}

TEST(PromptTemplates, EveryEmbeddedTemplateRendersWithTheAgentsValues) {
  std::map<std::string, std::string> all;
  for (const std::string& name : known_placeholders()) all[name] = "<" + name + ">";
  for (const EmbeddedPrompt& p : embedded_prompts()) {
    const PromptTemplate& t = prompt_template(p.name);
    EXPECT_NO_THROW(render_prompt(t.system, all)) << p.name;
    EXPECT_NO_THROW(render_prompt(t.user, all)) << p.name;
  }
}

}  // namespace
}  // namespace mk::agents
