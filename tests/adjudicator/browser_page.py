"""The explorer tests' view of a page, driven through Selenium WebDriver (a maintained
library) with Debian's ``chromium`` and ``chromium-driver`` (``apt-get install -y chromium
chromium-driver``): navigate, evaluate JavaScript, wait for a condition, click, type, and the
page's JavaScript errors."""

from __future__ import annotations

import shutil
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait


def find_browser() -> tuple[str, str] | None:
    """Paths of Debian's chromium and its driver, or None when either is missing."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (binary, driver) if binary and driver else None


def start_driver(binary: str, driver: str) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


class Page:
    """One tab of the driver."""

    def __init__(self, driver: webdriver.Chrome) -> None:
        self.driver = driver

    def navigate(self, url: str) -> None:
        self.driver.get(url)
        self.driver.get_log("browser")  # start the error log afresh

    def evaluate(self, expression: str) -> Any:
        return self.driver.execute_script(f"return ({expression});")

    def wait_for(self, expression: str, timeout: float = 20.0) -> Any:
        script = f"return ({expression});"
        return WebDriverWait(self.driver, timeout).until(lambda d: d.execute_script(script))

    def click(self, selector: str, button: str = "left") -> None:
        element = self.driver.find_element(By.CSS_SELECTOR, selector)
        if button == "right":
            ActionChains(self.driver).context_click(element).perform()
        else:
            element.click()

    def type_into(self, selector: str, text: str) -> None:
        element = self.driver.find_element(By.CSS_SELECTOR, selector)
        element.clear()
        element.send_keys(text)

    def errors(self) -> list[str]:
        """JavaScript errors logged since the last navigation (failed requests answered 4xx
        by the service are expected and left out)."""
        out = []
        for entry in self.driver.get_log("browser"):
            if entry.get("level") != "SEVERE":
                continue
            message = entry.get("message", "")
            if "Failed to load resource" in message:
                continue
            out.append(message)
        return out
