# The memory agents (agents/) and the examples, for docker-compose.yml (the llm extra
# for the example LLM agent).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY spade_memory ./spade_memory
RUN pip install --no-cache-dir ".[postgresql,llm]"
COPY agents ./agents
COPY examples ./examples
# spade_llm imports litellm, which otherwise downloads a price list at start.
ENV LITELLM_LOCAL_MODEL_COST_MAP=True PYTHONUNBUFFERED=1
CMD ["python", "agents/base_memory.py"]
